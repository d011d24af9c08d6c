import { fairLockKeys, type FairLockKeys } from '../keys';
import {
  acquireFairLock,
  confirmFairHandoff,
  forceReleaseFairLock,
  leaveFairQueue,
  releaseFairLock,
} from '../scripts';
import type { AttemptKind, WakeSource } from '../wait';
import { BaseLock } from './base-lock';
import type { LockContext } from './context';

/**
 * The fair lock: waiters acquire in the order they reached Redis, across processes.
 *
 * A waiter's place lives in a Redis queue, kept alive by its client's watchdog timer; a release
 * grants the lock straight to the head of the queue and tells only that owner's client, on the
 * client's own channel, so the woken waiter holds the lock without another round trip.
 */
export class FairLock extends BaseLock {
  private readonly keys: FairLockKeys;
  protected readonly wakeSourceFirst = true;

  constructor(context: LockContext, name: unknown) {
    super(context, name);
    this.keys = fairLockKeys(this.name);
  }

  private get queueKeys(): [string, string, string, string] {
    const { lock, queue, deadlines, marker } = this.keys;
    return [lock, queue, deadlines, marker];
  }

  protected async attempt(
    owner: string,
    leaseMs: number,
    latch: string,
    kind: AttemptKind,
  ): Promise<number | null> {
    const ttl = await acquireFairLock(
      this.context.redis,
      [...this.queueKeys, latch],
      [leaseMs, owner, this.context.fairLockWaitTimeout, kind],
    );
    if (ttl !== null && kind !== 'try') {
      this.context.fairWaiters.markQueued(this.name, owner);
      this.context.watchdog.start();
    }
    return ttl;
  }

  protected release(owner: string, latch: string, latchMs: number): Promise<0 | 1 | null> {
    return releaseFairLock(
      this.context.redis,
      [...this.queueKeys, latch],
      [owner, latchMs, this.context.fairLockWaitTimeout],
    );
  }

  protected async forceRelease(): Promise<boolean> {
    return (
      (await forceReleaseFairLock(this.context.redis, this.queueKeys, [this.context.fairLockWaitTimeout])) ===
      1
    );
  }

  /**
   * Hand-offs arrive on the client's own channel, which must be subscribed before this owner can
   * join the queue. One owner waits on one fair lock at a time: a second wait of the same owner
   * starts when the first ends (and then re-enters, or waits its turn).
   */
  protected async openWakeSource(owner: string): Promise<WakeSource> {
    await this.context.subscriber().ready();
    return this.context.fairWaiters.register(this.name, owner, this.keys);
  }

  protected override giveUp(owner: string): Promise<unknown> {
    return leaveFairQueue(this.context.redis, this.queueKeys, [owner, this.context.fairLockWaitTimeout]);
  }

  protected override async confirmHandoff(owner: string, leaseMs: number): Promise<boolean> {
    return (await confirmFairHandoff(this.context.redis, this.queueKeys, [owner, leaseMs])) === 1;
  }
}
