import type { FairWaiters } from '../waiting/fair-waiters';
import type { HoldBook, HeldLock } from '../ownership/hold-book';
import type { RedisConnection } from '../redis/connection';
import type { RedisCalls } from '../redis/redis-calls';
import { hashSlot } from '../redis/slots';
import { STALL_MS } from '../util/timing';
import { FairPlaces } from './fair-places';
import { LockLeases, renewExclusiveLocks, renewReadWriteHolds } from './lock-leases';
import { groupBy, type RenewalContext, type WatchdogOptions } from './renewal-context';

export type { WatchdogOptions } from './renewal-context';

/** How soon a failed renewal is tried again, at most. */
const RETRY_MS = 1_000;

/**
 * One timer per client keeps alive what the client has in Redis: the leases of locks it holds
 * through the watchdog, and the places of its waiters in fair-lock queues. Both are renewed in
 * batched script calls (at most `batchSize` locks or places each; on a cluster, one slot per call,
 * since a script may only touch the keys of one slot).
 *
 * The watchdog is the one scheduler; what each kind sends is its renewal task's (lock-leases.ts:
 * exclusive locks, read-write locks; fair-places.ts: fair waiters' places), as Redisson keeps one
 * renewal task per kind beside one scheduler.
 *
 * A lease is renewed every third of `timeout`, a place every third of `waiterTimeout`. Through
 * transient errors the timer keeps trying, more often, until a lease could have expired; then, or
 * as soon as Redis refuses a renewal (the hold is gone), the loss is reported instead of passing in
 * silence.
 */
export class Watchdog {
  private timer?: NodeJS.Timeout;
  /** performance.now() time at which the pending timer is due. */
  private timerDueAt = 0;
  /** When the last tick was due, and when its timer fired: a late one saw the loop stand still. */
  private lastTick = { dueAt: 0, firedAt: 0 };
  private stopped = false;
  private readonly period: number;
  private readonly exclusiveLeases: LockLeases;
  private readonly readWriteLeases: LockLeases;
  private readonly fairPlaces: FairPlaces;

  constructor(
    calls: RedisCalls,
    redis: RedisConnection,
    private readonly book: HoldBook,
    private readonly waiters: FairWaiters,
    private readonly options: WatchdogOptions,
  ) {
    this.period = Math.min(options.timeout, options.waiterTimeout) / 3;
    const context: RenewalContext = {
      calls,
      redis,
      options,
      reportRetry: (names, operation, error) => this.reportRetry(names, operation, error),
    };
    this.exclusiveLeases = new LockLeases(context, book, renewExclusiveLocks);
    this.readWriteLeases = new LockLeases(context, book, renewReadWriteHolds);
    this.fairPlaces = new FairPlaces(context, waiters);
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
      ).map((batch) => this.exclusiveLeases.renew(batch)),
      ...this.batches(
        due.filter((entry) => entry.preference !== undefined),
        (entry) => entry.name,
      ).map((batch) => this.readWriteLeases.renew(batch)),
      ...this.batches(places, (waiter) => waiter.keys.lock).map((batch) => this.fairPlaces.refresh(batch)),
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
