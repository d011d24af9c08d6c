import type { HoldBook, HeldLock } from './holds';
import type { RedisConnection } from './redis';
import { renewLocks } from './scripts';

/**
 * One timer per client renews every lock this client holds through the watchdog, in batched script
 * calls (at most `batchSize` locks each), every third of the lease. Through transient errors it
 * keeps trying, more often, until the lease could have expired; then, or as soon as Redis refuses
 * a renewal (the hold is gone), the loss is reported instead of passing in silence.
 */
export interface WatchdogOptions {
  /** The lease given to watchdog locks, in ms. */
  timeout: number;
  batchSize: number;
}

/** How soon a failed renewal is tried again, at most. */
const RETRY_MS = 1_000;

export class Watchdog {
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly redis: RedisConnection,
    private readonly book: HoldBook,
    private readonly options: WatchdogOptions,
  ) {}

  /** Called whenever a watchdog hold is taken; starts the timer if it is not running. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.schedule(this.options.timeout / 3);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delay: number): void {
    this.timer = setTimeout(() => void this.tick(), delay);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const now = performance.now();
    const due: HeldLock[] = [];
    for (const entry of this.book.watchdogHeld()) {
      if (entry.leaseEnd <= now) {
        this.book.lose(entry, 'its lease could not be renewed before it expired');
      } else if (!entry.renewing) {
        due.push(entry);
      }
    }
    if (this.book.watchdogHeld().length === 0) {
      this.timer = undefined;
      return;
    }
    const batches: HeldLock[][] = [];
    for (let i = 0; i < due.length; i += this.options.batchSize) {
      batches.push(due.slice(i, i + this.options.batchSize));
    }
    // Schedule the next tick now: a renewal stuck behind a dead connection must not stop the
    // timer from noticing that leases run out.
    const results = Promise.all(batches.map((batch) => this.renew(batch)));
    this.schedule(this.options.timeout / 3);
    const allRenewed = (await results).every(Boolean);
    if (!allRenewed && !this.stopped) {
      clearTimeout(this.timer);
      this.schedule(Math.min(RETRY_MS, this.options.timeout / 3));
    }
  }

  /** Resolves false when the batch could not be sent or answered (a transient failure). */
  private async renew(batch: HeldLock[]): Promise<boolean> {
    const sentAt = performance.now();
    for (const entry of batch) entry.renewing = true;
    try {
      const renewed = await renewLocks(
        this.redis,
        batch.map((entry) => entry.name),
        [this.options.timeout, ...batch.map((entry) => entry.ownerId)],
      );
      batch.forEach((entry, i) => {
        if (!this.book.isCurrent(entry) || !entry.byWatchdog) return;
        if (renewed[i] === 1) {
          entry.leaseEnd = Math.max(entry.leaseEnd, sentAt + this.options.timeout);
        } else {
          this.book.lose(entry, 'Redis refused to renew it: the hold was released, expired or deleted');
        }
      });
      return true;
    } catch {
      return false;
    } finally {
      for (const entry of batch) entry.renewing = false;
    }
  }
}
