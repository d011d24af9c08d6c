import { DEBUG, debug } from '../events';
import type { HeldLock, HoldBook } from '../ownership/hold-book';
import { renewLocks, renewReadWriteLocks } from '../protocol/scripts';
import { batchName, type RenewalContext } from './renewal-context';

/** One renewal script call for a batch of holds: per hold, 1 when renewed, 0 when Redis refused. */
type RenewCall = (context: RenewalContext, batch: HeldLock[]) => Promise<number[]>;

/**
 * The renewal task of the leases of locks held through the watchdog, one kind of lock per task:
 * each kind renews through its own script (see renewCall).
 */
export class LockLeases {
  constructor(
    private readonly context: RenewalContext,
    private readonly book: HoldBook,
    private readonly renewCall: RenewCall,
  ) {}

  /** Renews a batch; false when it could not be sent or answered (a transient failure). */
  async renew(batch: HeldLock[]): Promise<boolean> {
    const { calls, options } = this.context;
    const sentAt = performance.now();
    for (const entry of batch) entry.renewing = true;
    if (DEBUG) debug('renew %d lock(s): %s', batch.length, batchName(batch.map((entry) => entry.name)));
    // Redis renewed from no earlier than sentAt: the leases it renewed last that long.
    const extend = (renewed: number[]): void =>
      batch.forEach((entry, i) => {
        if (renewed[i] === 1 && this.book.isCurrent(entry) && entry.byWatchdog) {
          entry.leaseEnd = Math.max(entry.leaseEnd, sentAt + options.timeout);
          entry.renewalError = undefined;
        }
      });
    // Whenever its answer comes: also after the call gave up on it, and after its fate was written
    // off as unknown (a slow server's answer to a script it had to be sent in full, after NOSCRIPT,
    // takes two round trips). The lease is judged when it ends, and a late answer that came by then
    // keeps it; one that never comes (a partition) does not hold the judgement up.
    const send = (): Promise<number[]> => {
      const sent = this.renewCall(this.context, batch);
      sent.then(extend, () => undefined);
      return sent;
    };
    try {
      const renewed = await calls.run(batchName(batch.map((entry) => entry.name)), 'renew', send);
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
      this.context.reportRetry(
        batch.map((entry) => entry.name),
        'renew',
        error,
      );
      return false;
    } finally {
      for (const entry of batch) entry.renewing = false;
    }
  }
}

/** The exclusive lock kinds' holds: each lock's owner field gets the lease again (lua/lock/renew.lua). */
export const renewExclusiveLocks: RenewCall = ({ redis, options }, batch) =>
  renewLocks(
    redis,
    batch.map((entry) => entry.name),
    [options.timeout, ...batch.map((entry) => entry.ownerId)],
  );

/**
 * A read-write lock's holds: a read hold's timeout keys are renewed with its hash, and either
 * half keeps the name's writer preference as long as the hash (see lua/rwlock/renew.lua).
 */
export const renewReadWriteHolds: RenewCall = ({ redis, options }, batch) =>
  renewReadWriteLocks(
    redis,
    batch.flatMap((entry) => [entry.name, entry.readTimeouts ?? entry.name, entry.preference as string]),
    [
      options.timeout,
      ...batch.flatMap((entry) => [entry.ownerId, entry.readTimeouts === undefined ? 'w' : 'r']),
    ],
  );
