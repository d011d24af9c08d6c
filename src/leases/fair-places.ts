import { HANDED_ON, refreshFairPlaces } from '../protocol/scripts';
import type { FairWaiter, FairWaiters } from '../waiting/fair-waiters';
import { batchName, groupBy, type RenewalContext } from './renewal-context';

/**
 * The renewal task of fair-lock waiters' places: keeps queued waiters' places; a waiter whose
 * place is gone, or whose hand-off it may not know of (pending, or passed over), tries again at
 * once.
 */
export class FairPlaces {
  constructor(
    private readonly context: RenewalContext,
    private readonly waiters: FairWaiters,
  ) {}

  /**
   * Refreshes a batch, sent lock by lock (see Watchdog.batches): each lock's keys go once, followed
   * by its waiters. False when it could not be sent or answered (a transient failure).
   */
  async refresh(batch: FairWaiter[]): Promise<boolean> {
    const { calls, redis, options } = this.context;
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
      const kept = await calls.run(batchName(batch.map((waiter) => waiter.name)), 'refresh', async () =>
        refreshFairPlaces(redis, keys, [
          options.waiterTimeout,
          options.handoffTimeout,
          await options.publishCommand(),
          ...owners,
        ]),
      );
      sent.forEach((waiter, i) => {
        if (kept[i] !== 1) this.waiters.recheck(waiter);
      });
      names.forEach((name, j) => {
        if (kept[sent.length + j] === HANDED_ON) options.handedOn(name);
      });
      return true;
    } catch (error) {
      this.context.reportRetry(
        batch.map((waiter) => waiter.name),
        'refresh',
        error,
      );
      return false;
    }
  }
}
