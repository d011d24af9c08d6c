import { DEBUG, debug } from './events';
import type { FairWaiter, FairWaiters } from './fair-waiters';
import type { HoldBook, HeldLock } from './holds';
import type { RedisErrorReport } from './locks/context';
import type { RedisConnection } from './redis';
import type { RedisCalls } from './redis-call';
import { refreshFairPlaces, renewLocks, renewReadLocks, type PublishCommand } from './scripts';
import { hashSlot } from './slots';

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
  batchSize: number;
  /** Whether a batch must keep to one cluster slot. */
  groupBySlot: boolean;
  /** How a refresh that hands a free lock on announces it. */
  publishCommand(): PublishCommand | Promise<PublishCommand>;
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
    this.timer = this.options.inClientScope(() => setTimeout(() => void this.tick(), delay));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const now = performance.now();
    const due: HeldLock[] = [];
    for (const entry of this.book.watchdogHeld()) {
      if (entry.leaseEnd <= now) {
        this.book.lose(entry, 'renewal-failed', 'its lease could not be renewed before it expired');
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
    const results = Promise.all([
      ...this.batches(
        due.filter((entry) => entry.readTimeouts === undefined),
        (entry) => entry.name,
      ).map((batch) => this.renew(batch)),
      ...this.batches(
        due.filter((entry) => entry.readTimeouts !== undefined),
        (entry) => entry.name,
      ).map((batch) => this.renew(batch, true)),
      ...this.batches(places, (waiter) => waiter.keys.lock).map((batch) => this.refresh(batch)),
    ]);
    this.schedule(this.period);
    const allRenewed = (await results).every(Boolean);
    if (!allRenewed && !this.stopped) {
      clearTimeout(this.timer);
      this.schedule(Math.min(RETRY_MS, this.period));
    }
  }

  /** A lease is due once a third of it has passed since the last renewal (give or take a tick). */
  private isDue(entry: HeldLock, now: number): boolean {
    const remaining = entry.leaseEnd - now;
    return remaining <= (this.options.timeout * 2) / 3 + this.period / 2;
  }

  /** Resolves false when the batch could not be sent or answered (a transient failure). */
  private async renew(batch: HeldLock[], reads = false): Promise<boolean> {
    const sentAt = performance.now();
    for (const entry of batch) entry.renewing = true;
    if (DEBUG) debug('renew %d lock(s): %s', batch.length, batchName(batch.map((entry) => entry.name)));
    // A renewal that answers after it was given up still ran: the leases it renewed last that long.
    const extend = (renewed: number[]): void =>
      batch.forEach((entry, i) => {
        if (renewed[i] === 1 && this.book.isCurrent(entry) && entry.byWatchdog) {
          entry.leaseEnd = Math.max(entry.leaseEnd, sentAt + this.options.timeout);
        }
      });
    try {
      const renewed = await this.calls.run(
        batchName(batch.map((entry) => entry.name)),
        'renew',
        () =>
          // A read hold's timeout keys are renewed with its hash (see lua/rwlock/renew-read.lua).
          (reads ? renewReadLocks : renewLocks)(
            this.redis,
            reads
              ? batch.flatMap((entry) => [entry.name, entry.readTimeouts as string])
              : batch.map((entry) => entry.name),
            [this.options.timeout, ...batch.map((entry) => entry.ownerId)],
          ),
        {
          onOrphaned: (fate) => {
            if (fate.ran === true) extend(fate.value);
          },
        },
      );
      extend(renewed);
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
   * Keeps queued waiters' places; a waiter whose place is gone tries again at once. The batch is
   * sent lock by lock (see batches()): each lock's keys go once, followed by its waiters.
   */
  private async refresh(batch: FairWaiter[]): Promise<boolean> {
    const keys: string[] = [];
    const owners: Array<string | number> = [];
    /** The waiters in the order of the answers. */
    const sent: FairWaiter[] = [];
    for (const [, waiters] of groupBy(batch, (waiter) => waiter.keys.lock)) {
      const { lock, queue, deadlines, marker, handoffChannel } = (waiters[0] as FairWaiter).keys;
      keys.push(lock, queue, deadlines, marker, handoffChannel);
      owners.push(waiters.length, ...waiters.map((waiter) => waiter.ownerId));
      sent.push(...waiters);
    }
    try {
      const kept = await this.calls.run(batchName(batch.map((waiter) => waiter.name)), 'refresh', async () =>
        refreshFairPlaces(this.redis, keys, [
          this.options.waiterTimeout,
          await this.options.publishCommand(),
          ...owners,
        ]),
      );
      sent.forEach((waiter, i) => {
        if (kept[i] !== 1) this.waiters.recheck(waiter);
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
