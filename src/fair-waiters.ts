import { ownerLockKey } from './owner';
import { onAbort } from './abort';
import { ClientClosedError } from './errors';
import type { FairLockKeys } from './keys';

/**
 * This client's waiters on fair locks. A release hands the lock to the head of the queue and
 * publishes `granted\n<owner>\n<lock>` on the lock's hand-off channel (`recheck\n...` asks a
 * waiter to look again); this registry routes it to the waiter it names, if it is this client's.
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
  release(): void;
}

interface Sleeper {
  wake(wake: FairWake): void;
  fail(error: unknown): void;
}

/** The longest delay setTimeout keeps: a longer (or infinite) one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** This client's waiters on one lock, and when one of them should next look at the lock. */
class LockWatch {
  readonly waiters = new Set<Waiter>();
  timer?: NodeJS.Timeout;
  /** Time to look, and no waiter was asleep to do it: the next one to sleep looks instead. */
  due = false;

  lookIn(ms: number): void {
    clearTimeout(this.timer);
    this.due = false;
    this.timer = setTimeout(() => this.look(), Math.max(1, Math.min(ms, MAX_TIMER_MS)));
  }

  /** Whether a look is to come: a timer runs, or the next waiter to sleep looks. */
  get watching(): boolean {
    return this.timer !== undefined || this.due;
  }

  look(): void {
    this.timer = undefined;
    for (const waiter of this.waiters) {
      if (waiter.asleep) return waiter.wake('recheck');
    }
    this.due = true;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

class Waiter implements FairWaiter {
  queued = false;
  /** Waits sharing this waiter. */
  refs = 0;
  private readonly sleepers: Sleeper[] = [];
  /** A wake-up that came while nobody slept (between attempts). */
  private pending?: Exclude<FairWake, 'timeout'>;

  constructor(
    readonly name: string,
    readonly ownerId: string,
    readonly keys: FairLockKeys,
    private readonly watch: LockWatch,
  ) {}

  get asleep(): boolean {
    return this.sleepers.length > 0;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<FairWake> {
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
      const timer = setTimeout(() => sleeper.wake('timeout'), ms);
      const stopListening = signal && onAbort(signal, () => sleeper.fail(signal.reason));
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
}

export class FairWaiters {
  private readonly waiters = new Map<string, Waiter>();
  private readonly locks = new Map<string, LockWatch>();

  /**
   * @param keyPrefix the connection's ioredis keyPrefix: a message names the lock by its key as the
   *                  script saw it, prefixed.
   */
  constructor(private readonly keyPrefix = '') {}

  /** Registers a wait of `ownerId` on lock `name` (joining the owner's waiter there, if any). */
  register(name: string, ownerId: string, keys: FairLockKeys): FairWait {
    const key = waiterKey(name, ownerId);
    let waiter = this.waiters.get(key);
    if (!waiter) {
      let watch = this.locks.get(name);
      if (!watch) {
        watch = new LockWatch();
        this.locks.set(name, watch);
      }
      waiter = new Waiter(name, ownerId, keys, watch);
      watch.waiters.add(waiter);
      this.waiters.set(key, waiter);
    }
    const own = waiter;
    own.refs += 1;
    let released = false;
    return {
      sleep: (ms, signal) => own.sleep(ms, signal),
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
      watch.stop();
      this.locks.delete(waiter.name);
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

  markQueued(name: string, ownerId: string): void {
    const waiter = this.waiters.get(waiterKey(name, ownerId));
    if (waiter) waiter.queued = true;
  }

  /** A message on a hand-off channel. */
  onHandoffMessage(message: string): void {
    const [kind, ownerId, ...rest] = message.split('\n');
    if ((kind !== 'granted' && kind !== 'recheck') || ownerId === undefined) return;
    const key = rest.join('\n');
    if (!key.startsWith(this.keyPrefix)) return;
    this.waiters.get(waiterKey(key.slice(this.keyPrefix.length), ownerId))?.wake(kind);
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
    for (const watch of this.locks.values()) watch.stop();
    this.locks.clear();
  }
}

function waiterKey(name: string, ownerId: string): string {
  return ownerLockKey(ownerId, name);
}
