import { ownerLockKey } from '../ownership/owner';
import { onAbort } from '../util/abort';
import { ClientClosedError } from '../errors';
import type { FairLockKeys } from '../protocol/keys';
import { LoopStalls } from '../util/loop-stalls';
import { sharedDelay } from '../util/timing';

/**
 * This client's waiters on fair locks. A release hands the lock to the head of the queue and
 * publishes `granted\n<owner>\n<lock>` on the channel where that owner's client hears hand-offs
 * (kept beside its place; `recheck\n...` asks a waiter to look again); this registry routes it to
 * the waiter it names.
 * The watchdog keeps every queued waiter's place alive through `places()`.
 *
 * A waiter does not look again on a timer of its own: the client watches each lock's holder once
 * (see lookAgainIn), however many of its waiters wait there. When the ttl that the latest attempt
 * on the lock saw has passed, one waiter looks again, and that attempt, finding the lock free,
 * takes it or hands it to the head of the queue, whose client is then told. Everything else that
 * concerns one waiter comes addressed to it: a grant, a request to look again (it became the head
 * behind a new holder), a place found gone, a reconnect.
 *
 * An owner has one place in a queue, so the waits of one owner on one lock (two calls through one
 * handle at once) share one waiter: a grant goes to one of them, and the others look again — and
 * re-enter, being the same owner.
 *
 * A grant is provisional until the waiter's client confirms it, and comes back after the hand-off
 * timeout if it does not (see docs/fair-lock.md): the client that made the grant settles it then
 * (see HandoffWatches); and this client, hearing a grant for one of its waiters, has its other
 * waiters on the lock, if any, look again once that time has passed. A grant this client hears for a waiter of its own that is no longer
 * waiting (it gave up while Redis was out of reach) goes back at once (`unclaimed`). And a grant
 * read just after this process stood still may be older than the hand-off timeout, already passed
 * on: the waiter then looks again (its attempt takes the hand-off if it is still its own) rather
 * than hold the lock on the message's word.
 */
export type FairWake = 'granted' | 'recheck' | 'timeout';

export interface FairWaiter {
  readonly name: string;
  readonly ownerId: string;
  readonly keys: FairLockKeys;
  /** Set once the waiter is in the Redis queue; only then is its place refreshed. */
  queued: boolean;
}

/** One wait's hold on its owner's waiter. */
export interface FairWait {
  sleep(ms: number, signal?: AbortSignal): Promise<FairWake>;
  /** Ends this wait's sleep in progress with 'recheck': true when it was asleep. */
  interrupt(): boolean;
  release(): void;
}

/** One wait's sleep in progress. */
interface SleepHold {
  sleeper?: Sleeper;
}

interface Sleeper {
  wake(wake: FairWake): void;
  fail(error: unknown): void;
}

/** The longest delay setTimeout keeps: a longer (or infinite) one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * This client's waiters on one lock, and when one of them should next look at the lock. The time
 * to look moves with every answer and every grant heard, many times a second on a busy lock: it is
 * written down, and the timer is made anew only when the look comes sooner than the timer would
 * fire (a timer that fires early sets itself again for the rest). When the last waiter leaves, the
 * watch stays until its timer fires, for the next waiter on a lock that is busy to find it.
 */
class LockWatch {
  /** @param idle takes the watch away: it has no waiters, and no timer runs. */
  constructor(private readonly idle: () => void) {}

  readonly waiters = new Set<Waiter>();
  private timer?: NodeJS.Timeout;
  /** performance.now() at which the timer fires. */
  private timerAt = Infinity;
  /** performance.now() at which one of the waiters looks; Infinity: no look to come. */
  private lookAt = Infinity;
  /** Time to look, and no waiter was asleep to do it: the next one to sleep looks instead. */
  due = false;
  /** What this client holds for its waiters here while any wait, by what (see holdWhileWaiting). */
  readonly held = new Map<string, () => void>();

  lookIn(ms: number): void {
    if (this.waiters.size === 0) return;
    this.due = false;
    this.lookAt = performance.now() + Math.max(1, Math.min(ms, MAX_TIMER_MS));
    if (this.timer === undefined || this.timerAt > this.lookAt) this.arm();
  }

  /** Whether a look is to come: one is due at a time, or the next waiter to sleep looks. */
  get watching(): boolean {
    return this.lookAt !== Infinity || this.due;
  }

  look(): void {
    this.lookAt = Infinity;
    for (const waiter of this.waiters) {
      if (waiter.asleep) return waiter.wake('recheck');
    }
    this.due = true;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.lookAt = Infinity;
    this.releaseHeld();
  }

  private releaseHeld(): void {
    for (const release of this.held.values()) release();
    this.held.clear();
  }

  /** The last waiter left: no look is to come; the watch goes once its timer has fired. */
  leave(): void {
    this.lookAt = Infinity;
    this.due = false;
    this.releaseHeld();
    if (this.timer === undefined) this.idle();
  }

  private arm(): void {
    clearTimeout(this.timer);
    const delay = sharedDelay(this.lookAt - performance.now());
    this.timerAt = performance.now() + delay;
    this.timer = setTimeout(() => this.fired(), Math.max(1, delay));
  }

  private fired(): void {
    this.timer = undefined;
    if (this.waiters.size === 0) return this.idle();
    if (this.lookAt === Infinity) return;
    if (this.lookAt - performance.now() > 1) this.arm();
    else this.look();
  }
}

/**
 * Counts the grants this process heard for its waiters, so that an attempt can tell which of them
 * came before it was sent (see FairWaiters.markQueued, tookHandoff).
 */
let grantsHeard = 0;

class Waiter implements FairWaiter {
  queued = false;
  /** Waits sharing this waiter. */
  refs = 0;
  private readonly sleepers: Sleeper[] = [];
  /** A wake-up that came while nobody slept (between attempts). */
  private pending?: Exclude<FairWake, 'timeout'>;
  /** When the last grant for this owner was heard (grantsHeard then). */
  heardAt = 0;
  /**
   * Since when a hand-off's message is looked for (grantsHeard then): the waiter's start, or the
   * last hand-off an attempt took over (see tookHandoff).
   */
  since = grantsHeard;

  constructor(
    readonly name: string,
    readonly ownerId: string,
    readonly keys: FairLockKeys,
    private readonly watch: LockWatch,
  ) {}

  get asleep(): boolean {
    return this.sleepers.length > 0;
  }

  sleep(ms: number, signal: AbortSignal | undefined, hold: SleepHold): Promise<FairWake> {
    signal?.throwIfAborted();
    if (this.pending) {
      const wake = this.pending;
      // A grant is taken by one wait; the others only look again.
      this.pending = wake === 'granted' && this.refs > 1 ? 'recheck' : undefined;
      return Promise.resolve(wake);
    }
    if (this.watch.due) {
      this.watch.due = false;
      return Promise.resolve('recheck');
    }
    return new Promise<FairWake>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        stopListening?.();
        hold.sleeper = undefined;
        const index = this.sleepers.indexOf(sleeper);
        if (index >= 0) this.sleepers.splice(index, 1);
      };
      const sleeper: Sleeper = {
        wake: (wake) => {
          finish();
          resolve(wake);
        },
        fail: (error) => {
          finish();
          reject(error);
        },
      };
      // A wait without a bound sleeps until it is told (lock()): no timer to make and drop.
      const timer = ms < MAX_TIMER_MS ? setTimeout(() => sleeper.wake('timeout'), ms) : undefined;
      const stopListening = signal && onAbort(signal, () => sleeper.fail(signal.reason));
      hold.sleeper = sleeper;
      this.sleepers.push(sleeper);
    });
  }

  wake(wake: Exclude<FairWake, 'timeout'>): void {
    const [first, ...others] = this.sleepers;
    if (!first) {
      // A grant outranks a re-check request: keep the stronger news.
      if (this.pending !== 'granted') this.pending = wake;
      return;
    }
    first.wake(wake);
    for (const other of others) other.wake('recheck');
  }

  fail(error: unknown): void {
    for (const sleeper of [...this.sleepers]) sleeper.fail(error);
  }

  /** The grant kept for the next sleep, if any, is not to be taken for the lock. */
  dropKeptGrant(): void {
    if (this.pending === 'granted') this.pending = undefined;
  }
}

export interface FairWaitersOptions {
  /**
   * The connection's ioredis keyPrefix: a message names the lock by its key as the script saw it,
   * prefixed.
   */
  keyPrefix: string;
  /** fairLockHandoffTimeout: how long a grant waits for its waiter's client to confirm it. */
  handoffTimeout: number;
  /** A grant came for `ownerId` on lock `name`, and this client has no waiter of that owner there. */
  unclaimed?(name: string, ownerId: string): void;
}

/** How many late grants are kept before those past their time are swept. */
const LATE_GRANTS_SWEEP = 1_000;

export class FairWaiters {
  private readonly waiters = new Map<string, Waiter>();
  /**
   * Owners (waiterKey) whose attempt took over a hand-off before its message came, until when that
   * message may come (see tookHandoff).
   */
  private readonly lateGrants = new Map<string, number>();
  private readonly locks = new Map<string, LockWatch>();
  private readonly stalls: LoopStalls;

  constructor(private readonly options: FairWaitersOptions) {
    // A message read after a stall of half the hand-off timeout may have waited that long already:
    // its confirmation must still reach Redis in the half that is left.
    this.stalls = new LoopStalls(options.handoffTimeout / 4, () => this.waiters.size > 0);
  }

  /** Registers a wait of `ownerId` on lock `name` (joining the owner's waiter there, if any). */
  register(name: string, ownerId: string, keys: FairLockKeys): FairWait {
    const key = waiterKey(name, ownerId);
    let waiter = this.waiters.get(key);
    if (!waiter) {
      let watch = this.locks.get(name);
      if (!watch) {
        const made = new LockWatch(() => {
          if (this.locks.get(name) === made && made.waiters.size === 0) this.locks.delete(name);
        });
        watch = made;
        this.locks.set(name, watch);
      }
      waiter = new Waiter(name, ownerId, keys, watch);
      watch.waiters.add(waiter);
      this.waiters.set(key, waiter);
      this.stalls.start();
    }
    const own = waiter;
    own.refs += 1;
    let released = false;
    const hold: SleepHold = {};
    return {
      sleep: (ms, signal) => own.sleep(ms, signal, hold),
      interrupt: () => {
        if (!hold.sleeper) return false;
        hold.sleeper.wake('recheck');
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        own.refs -= 1;
        if (own.refs === 0 && this.waiters.get(key) === own) this.forget(key, own);
      },
    };
  }

  private forget(key: string, waiter: Waiter): void {
    this.waiters.delete(key);
    const watch = this.locks.get(waiter.name);
    if (!watch) return;
    watch.waiters.delete(waiter);
    if (watch.waiters.size === 0) {
      watch.leave();
    } else if (!watch.watching) {
      // It was the one to look (or its answer was awaited) and it left without an answer: another
      // waiter looks in its stead, so that the holder stays watched.
      watch.look();
    }
  }

  /**
   * An attempt on lock `name` found it held for `ms` more (the holder's ttl, or how long to wait
   * before looking at a holder without one): one of this client's waiters there looks again then.
   * The latest answer is the freshest word on the holder, so it replaces any earlier one.
   */
  lookAgainIn(name: string, ms: number): void {
    this.locks.get(name)?.lookIn(ms);
  }

  /**
   * Keeps something for this client's waiters on lock `name` (a subscription) while any of them
   * waits: `release` gives it back once the last one has left, or at once when none waits now or
   * one is held under `what` already.
   */
  holdWhileWaiting(name: string, what: string, release: () => void): void {
    const watch = this.locks.get(name);
    if (!watch || watch.waiters.size === 0 || watch.held.has(what)) return release();
    watch.held.set(what, release);
  }

  /** The count of grants heard so far, for an attempt that may claim one (see markQueued, tookHandoff). */
  attemptSent(): number {
    return grantsHeard;
  }

  /**
   * An attempt of `ownerId` took the lock by taking over a hand-off to it (fair/acquire.lua
   * answered TOOK_HANDOFF). The hand-off's message went out after the owner's waiter here began
   * (its place was made after), before the attempt ran. Heard already, it woke a wait of the owner
   * (which confirms it as a re-entry) or was kept for the next sleep (dropped now: the attempt took
   * the hand-off). Otherwise it may be on its way (or lost with a subscriber that came back): when
   * a grant for the owner comes within a hand-off timeout, its wait looks again instead of taking
   * it for the lock. A late message would start a later wait's body on a hand-off that is gone; a
   * grant that is the owner's, taken for a look, costs one attempt (which takes it over).
   */
  tookHandoff(name: string, ownerId: string): void {
    const key = waiterKey(name, ownerId);
    const waiter = this.waiters.get(key);
    if (waiter) {
      const heard = waiter.heardAt > waiter.since;
      waiter.since = grantsHeard;
      if (heard) return waiter.dropKeptGrant();
    }
    if (this.lateGrants.size >= LATE_GRANTS_SWEEP) this.sweepLateGrants();
    // A message is late by a hand-off timeout at most: its grant ran out by then anyway.
    this.lateGrants.set(key, performance.now() + this.options.handoffTimeout);
  }

  /** Whether a grant heard for `key` is the late message of a hand-off an attempt took over. */
  private isLateGrant(key: string): boolean {
    const until = this.lateGrants.get(key);
    if (until === undefined) return false;
    this.lateGrants.delete(key);
    return until >= performance.now();
  }

  private sweepLateGrants(): void {
    const now = performance.now();
    for (const [key, until] of this.lateGrants) if (until < now) this.lateGrants.delete(key);
  }

  /**
   * An attempt of `ownerId` that would have claimed a pending hand-off to it (fair/acquire.lua,
   * mode 'first' or 'queued') found the lock held by another, and holds a place: a hand-off to the
   * owner parked before the attempt was sent (`sentAt`, from attemptSent) came from a grant that is
   * gone, which a sleep would otherwise take for the lock, starting the body while another holds it.
   */
  markQueued(name: string, ownerId: string, sentAt: number): void {
    const waiter = this.waiters.get(waiterKey(name, ownerId));
    if (!waiter) return;
    waiter.queued = true;
    if (waiter.heardAt <= sentAt) waiter.dropKeptGrant();
  }

  /**
   * A message on a hand-off channel: `<kind>\n<owner>\n<lock key>`. Read in place, without
   * splitting it into pieces: it is on the path from a release to the next holder's body.
   */
  onHandoffMessage(message: string): void {
    const ownerAt = message.indexOf('\n') + 1;
    const keyAt = message.indexOf('\n', ownerAt) + 1;
    if (ownerAt === 0 || keyAt === 0) return;
    const kind = message.slice(0, ownerAt - 1);
    if (kind !== 'granted' && kind !== 'recheck') return;
    const { keyPrefix } = this.options;
    if (!message.startsWith(keyPrefix, keyAt)) return;
    const name = message.slice(keyAt + keyPrefix.length);
    const ownerId = message.slice(ownerAt, keyAt - 1);
    const key = waiterKey(name, ownerId);
    const waiter = this.waiters.get(key);
    if (kind === 'recheck') return waiter?.wake(kind);
    // The lock is held provisionally now, until the grant is confirmed or comes back: this
    // client's other waiters there look again once that time has passed. The waiter it is for
    // needs no look (it holds the lock, or looks again at once after a stall), nor a timer set
    // for it on every hand-off.
    const watch = this.locks.get(name);
    if (watch && watch.waiters.size > (waiter ? 1 : 0)) watch.lookIn(this.options.handoffTimeout);
    if (!waiter) return this.options.unclaimed?.(name, ownerId);
    waiter.heardAt = grantsHeard += 1;
    const late = this.lateGrants.size > 0 && this.isLateGrant(key);
    waiter.wake(late || this.stalls.justStalled ? 'recheck' : 'granted');
  }

  /** Every waiter tries again: after a reconnect, or when its place turned out to be gone. */
  recheckAll(): void {
    for (const waiter of this.waiters.values()) waiter.wake('recheck');
  }

  recheck(waiter: FairWaiter): void {
    (waiter as Waiter).wake('recheck');
  }

  /** The waiters whose places live in Redis now. */
  places(): FairWaiter[] {
    return [...this.waiters.values()].filter((waiter) => waiter.queued);
  }

  close(): void {
    for (const waiter of this.waiters.values()) waiter.fail(new ClientClosedError());
    this.waiters.clear();
    this.lateGrants.clear();
    this.stalls.stop();
    for (const watch of this.locks.values()) watch.stop();
    this.locks.clear();
  }
}

function waiterKey(name: string, ownerId: string): string {
  return ownerLockKey(ownerId, name);
}
