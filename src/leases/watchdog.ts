import { DEBUG, debug, type RedisErrorReport } from '../events';
import type { FairWaiter, FairWaiters } from '../waiting/fair-waiters';
import type { HoldBook, HeldLock } from '../ownership/hold-book';
import type { RedisConnection } from '../redis/connection';
import type { RedisCalls } from '../redis/redis-calls';
import {
  HANDED_ON,
  refreshFairPlaces,
  renewLocks,
  renewReadWriteLocks,
  type PublishCommand,
} from '../protocol/scripts';
import { hashSlot } from '../redis/slots';
import { STALL_MS } from '../util/timing';

/**
 * One timer per client keeps alive what the client has in Redis: the leases of locks it holds
 * through the watchdog, and the places of its waiters in fair-lock queues. Both are renewed in
 * batched script calls (at most `batchSize` locks or places each; on a cluster, one slot per call,
 * since a script may only touch the keys of one slot).
 *
 * A lease is renewed every third of `timeout`, a place every third of `waiterTimeout`. Through
 * transient errors the timer keeps trying, more often, until a lease could have expired; then, or
 * as soon as Redis refuses a renewal (the hold is gone), the loss is reported instead of passing in
 * silence.
 */
export interface WatchdogOptions {
  /** The lease given to watchdog locks, in ms. */
  timeout: number;
  /** How long a fair-lock waiter's place lives without a refresh, in ms. */
  waiterTimeout: number;
  /** How long a hand-off that a refresh makes (of a free lock) waits to be confirmed, in ms. */
  handoffTimeout: number;
  batchSize: number;
  /** Whether a batch must keep to one cluster slot. */
  groupBySlot: boolean;
  /** How Redisson's waiters are told (a refresh may hand a free lock to one of them). */
  publishCommand(): PublishCommand | Promise<PublishCommand>;
  /** A refresh handed fair lock `name` to a waiter: the client watches that hand-off. */
  handedOn(name: string): void;
  /** Told of every failed renewal or refresh (they are retried). */
  report(report: RedisErrorReport): void;
  /** The connection's ioredis keyPrefix: slots are those of the prefixed keys. */
  keyPrefix: string;
  /** Keeps the client's entry (see ClientRegistry) alive at least this many ms, while it holds or waits. */
  keepAnnounced(ms: number): void;
  /**
   * Runs fn in the client's own async scope. The timer reschedules itself for as long as anything
   * is held; started in a caller's scope, it would keep that caller's AsyncLocalStorage stores
   * (its task, a request's context) alive all that time.
   */
  inClientScope<T>(fn: () => T): T;
}

/** How soon a failed renewal is tried again, at most. */
const RETRY_MS = 1_000;

export class Watchdog {
  private timer?: NodeJS.Timeout;
  /** performance.now() time at which the pending timer is due. */
  private timerDueAt = 0;
  /** When the last tick was due, and when its timer fired: a late one saw the loop stand still. */
  private lastTick = { dueAt: 0, firedAt: 0 };
  private stopped = false;
  private readonly period: number;

  constructor(
    private readonly calls: RedisCalls,
    private readonly redis: RedisConnection,
    private readonly book: HoldBook,
    private readonly waiters: FairWaiters,
    private readonly options: WatchdogOptions,
  ) {
    this.period = Math.min(options.timeout, options.waiterTimeout) / 3;
  }

  /** Called whenever a watchdog hold is taken or a waiter queues; starts the timer if idle. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.schedule(this.period);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delay: number): void {
    this.timerDueAt = performance.now() + delay;
    this.timer = this.options.inClientScope(() => setTimeout(() => this.fired(), delay));
    this.timer.unref();
  }

  /**
   * The timer fired. The tick runs after this turn's I/O: when the event loop stood still, renewals
   * answered meanwhile are read first (in the poll phase that follows the timers), and extend their
   * leases before the tick judges them.
   */
  private fired(): void {
    this.lastTick = { dueAt: this.timerDueAt, firedAt: performance.now() };
    setImmediate(() => void this.tick());
  }

  /**
   * A lease found over, before anything else told its holder: lost, for the reason that ended it.
   * Nothing while it still runs, or while a renewal is out whose answer may extend it (it may be
   * read later in this very turn: the watchdog judges it then). Called by the lock before it sends
   * anything for the holder (unlock, re-entry, queries), and by the tick.
   */
  noticeOverdue(entry: HeldLock, now = performance.now()): void {
    if (entry.leaseEnd > now) return;
    if (!entry.byWatchdog) {
      this.book.fixedLeaseOver(entry, now - entry.leaseEnd > STALL_MS);
      return;
    }
    if (entry.renewing) return;
    this.loseExpired(entry, now);
  }

  /**
   * A watchdog lease ran out: because this process stood still (blocked by synchronous work, or
   * paused) when it had to be renewed, or because Redis did not renew it while the process ran.
   * Told apart by the watchdog's own timer, not by which timer ran first: one due before the lease
   * ended that fired (or is still waiting) after it saw the event loop stand still at that moment.
   */
  private loseExpired(entry: HeldLock, now: number): void {
    const stoodStill = this.stoodStillAt(entry.leaseEnd, now);
    if (stoodStill > 0) {
      this.book.lose(
        entry,
        'lease-expired',
        `its lease ran out while this process was not running (its event loop stood still for ` +
          `${Math.round(stoodStill)} ms: long synchronous work, or the process was paused), so the ` +
          'watchdog could not renew it in time',
      );
      return;
    }
    const failure = entry.renewalError;
    this.book.lose(
      entry,
      'renewal-failed',
      'its lease could not be renewed before it expired: ' +
        (failure instanceof Error
          ? `the renewals failed (last: ${failure.message})`
          : 'no renewal was answered in time'),
    );
  }

  /**
   * How long the event loop had been standing still at `moment` (performance.now() time), by the
   * watchdog's timer: 0 when it ran. A timer due at or before `moment` that fired after it, later
   * than STALL_MS, or that is that late and still waiting, saw the loop stand still then.
   */
  private stoodStillAt(moment: number, now: number): number {
    if (this.timer && this.timerDueAt <= moment && now - this.timerDueAt > STALL_MS) {
      return now - this.timerDueAt;
    }
    const { dueAt, firedAt } = this.lastTick;
    if (dueAt <= moment && moment <= firedAt && firedAt - dueAt > STALL_MS) return firedAt - dueAt;
    return 0;
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const now = performance.now();
    const due: HeldLock[] = [];
    for (const entry of this.book.watchdogHeld()) {
      if (entry.leaseEnd <= now) {
        this.loseExpired(entry, now);
      } else if (!entry.renewing && this.isDue(entry, now)) {
        due.push(entry);
      }
    }
    const places = this.waiters.places();
    if (this.book.watchdogHeld().length === 0 && places.length === 0) {
      this.timer = undefined;
      return;
    }
    this.options.keepAnnounced(2 * Math.max(this.options.timeout, this.options.waiterTimeout));
    // Schedule the next tick now: a renewal stuck behind a dead connection must not stop the
    // timer from noticing that leases run out.
    const leasesEnd = this.soonestLeaseEnd();
    const results = Promise.all([
      ...this.batches(
        due.filter((entry) => entry.preference === undefined),
        (entry) => entry.name,
      ).map((batch) => this.renew(batch)),
      ...this.batches(
        due.filter((entry) => entry.preference !== undefined),
        (entry) => entry.name,
      ).map((batch) => this.renew(batch, true)),
      ...this.batches(places, (waiter) => waiter.keys.lock).map((batch) => this.refresh(batch)),
    ]);
    this.schedule(this.untilNextTick(this.period, leasesEnd));
    const allRenewed = (await results).every(Boolean);
    if (!allRenewed && !this.stopped) {
      clearTimeout(this.timer);
      this.schedule(this.untilNextTick(Math.min(RETRY_MS, this.period), this.soonestLeaseEnd()));
    }
  }

  /**
   * The delay of the next tick: `delay`, or sooner when a lease ends before then (its renewals
   * failing, or not answered yet), so that its holder is told the moment it ends, not a period or
   * a failed call later (an ioredis commandTimeout can hold a renewal's failure back that long).
   */
  private untilNextTick(delay: number, leasesEnd: number): number {
    return Math.max(1, Math.min(delay, Math.ceil(leasesEnd - performance.now()) + 1));
  }

  /** When the first lease held through the watchdog ends (Infinity: none). */
  private soonestLeaseEnd(): number {
    let soonest = Infinity;
    for (const entry of this.book.watchdogHeld()) soonest = Math.min(soonest, entry.leaseEnd);
    return soonest;
  }

  /** A lease is due once a third of it has passed since the last renewal (give or take a tick). */
  private isDue(entry: HeldLock, now: number): boolean {
    const remaining = entry.leaseEnd - now;
    return remaining <= (this.options.timeout * 2) / 3 + this.period / 2;
  }

  /** Resolves false when the batch could not be sent or answered (a transient failure). */
  /** `readWrite`: a batch of read-write lock holds (see renewCall). */
  private async renew(batch: HeldLock[], readWrite = false): Promise<boolean> {
    const sentAt = performance.now();
    for (const entry of batch) entry.renewing = true;
    if (DEBUG) debug('renew %d lock(s): %s', batch.length, batchName(batch.map((entry) => entry.name)));
    // Redis renewed from no earlier than sentAt: the leases it renewed last that long.
    const extend = (renewed: number[]): void =>
      batch.forEach((entry, i) => {
        if (renewed[i] === 1 && this.book.isCurrent(entry) && entry.byWatchdog) {
          entry.leaseEnd = Math.max(entry.leaseEnd, sentAt + this.options.timeout);
          entry.renewalError = undefined;
        }
      });
    // Whenever its answer comes: also after the call gave up on it, and after its fate was written
    // off as unknown (a slow server's answer to a script it had to be sent in full, after NOSCRIPT,
    // takes two round trips). The lease is judged when it ends, and a late answer that came by then
    // keeps it; one that never comes (a partition) does not hold the judgement up.
    const send = (): Promise<number[]> => {
      const sent = this.renewCall(batch, readWrite);
      sent.then(extend, () => undefined);
      return sent;
    };
    try {
      const renewed = await this.calls.run(batchName(batch.map((entry) => entry.name)), 'renew', send);
      batch.forEach((entry, i) => {
        if (!this.book.isCurrent(entry) || !entry.byWatchdog) return;
        if (renewed[i] !== 1) {
          this.book.lose(
            entry,
            'renewal-refused',
            'Redis refused to renew it: the hold was released, expired or deleted',
          );
        }
      });
      return true;
    } catch (error) {
      for (const entry of batch) entry.renewalError = error;
      this.reportRetry(
        batch.map((entry) => entry.name),
        'renew',
        error,
      );
      return false;
    } finally {
      for (const entry of batch) entry.renewing = false;
    }
  }

  /**
   * One renewal call. A read-write lock's holds go through their own script: a read hold's timeout
   * keys are renewed with its hash, and either half keeps the name's writer preference as long as
   * the hash (see lua/rwlock/renew.lua).
   */
  private renewCall(batch: HeldLock[], readWrite: boolean): Promise<number[]> {
    const { timeout } = this.options;
    if (!readWrite)
      return renewLocks(
        this.redis,
        batch.map((entry) => entry.name),
        [timeout, ...batch.map((entry) => entry.ownerId)],
      );
    return renewReadWriteLocks(
      this.redis,
      batch.flatMap((entry) => [entry.name, entry.readTimeouts ?? entry.name, entry.preference as string]),
      [timeout, ...batch.flatMap((entry) => [entry.ownerId, entry.readTimeouts === undefined ? 'w' : 'r'])],
    );
  }

  /**
   * Keeps queued waiters' places; a waiter whose place is gone, or whose hand-off it may not know
   * of (pending, or passed over), tries again at once. The batch is sent lock by lock (see
   * batches()): each lock's keys go once, followed by its waiters.
   */
  private async refresh(batch: FairWaiter[]): Promise<boolean> {
    const keys: string[] = [];
    const owners: Array<string | number> = [];
    /** The waiters in the order of the answers. */
    const sent: FairWaiter[] = [];
    /** The locks, by name, in the order of the answers that follow the waiters'. */
    const names: string[] = [];
    for (const [, waiters] of groupBy(batch, (waiter) => waiter.keys.lock)) {
      names.push((waiters[0] as FairWaiter).name);
      const { lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts } = (
        waiters[0] as FairWaiter
      ).keys;
      keys.push(lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts);
      owners.push(waiters.length, ...waiters.map((waiter) => waiter.ownerId));
      sent.push(...waiters);
    }
    try {
      const kept = await this.calls.run(batchName(batch.map((waiter) => waiter.name)), 'refresh', async () =>
        refreshFairPlaces(this.redis, keys, [
          this.options.waiterTimeout,
          this.options.handoffTimeout,
          await this.options.publishCommand(),
          ...owners,
        ]),
      );
      sent.forEach((waiter, i) => {
        if (kept[i] !== 1) this.waiters.recheck(waiter);
      });
      names.forEach((name, j) => {
        if (kept[sent.length + j] === HANDED_ON) this.options.handedOn(name);
      });
      return true;
    } catch (error) {
      this.reportRetry(
        batch.map((waiter) => waiter.name),
        'refresh',
        error,
      );
      return false;
    }
  }

  private reportRetry(names: string[], operation: string, error: unknown): void {
    if (this.stopped) return;
    const retryInMs = Math.min(RETRY_MS, this.period);
    for (const name of new Set(names)) this.options.report({ name, operation, error, retryInMs });
  }

  /**
   * Splits items into script calls: at most batchSize each and, on a cluster, one slot each. Items
   * of one key (a lock) are kept next to each other, so a call names each of its locks once.
   */
  private batches<T>(items: T[], keyOf: (item: T) => string): T[][] {
    const slotOf = (item: T): number =>
      this.options.groupBySlot ? hashSlot(this.options.keyPrefix + keyOf(item)) : 0;
    const size = this.options.batchSize;
    const result: T[][] = [];
    for (const [, group] of groupBy(items, slotOf)) {
      const ordered = [...groupBy(group, keyOf).values()].flat();
      for (let i = 0; i < ordered.length; i += size) result.push(ordered.slice(i, i + size));
    }
    return result;
  }
}

/** Items by key, in the order each key first appears. */
function groupBy<T, K>(items: T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/** How a batch is named in its errors: its one lock, or its first and how many more. */
function batchName(names: string[]): string {
  const distinct = [...new Set(names)];
  return distinct.length === 1 ? (distinct[0] as string) : `${distinct[0]} (+${distinct.length - 1} more)`;
}
