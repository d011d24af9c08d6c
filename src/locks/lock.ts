import { lockKeys, type LockKeys } from '../keys';
import { acquireLock, forceReleaseLock, releaseLock, withdrawLock } from '../scripts';
import type { StepLimits, WakeSource } from '../wait';
import type { LockKind } from '../events';
import { BaseLock, type HandleOwner } from './base-lock';
import type { LockContext } from './context';

/** The reentrant, non-fair lock: Redisson's RLock protocol and key layout. */
export class ReentrantLock extends BaseLock {
  private readonly keys: LockKeys;
  protected readonly wakeSourceFirst = false;
  readonly kind: LockKind = 'lock';

  constructor(context: LockContext, name: unknown, owner?: HandleOwner) {
    super(context, name, owner);
    this.keys = lockKeys(this.name, this.slot);
  }

  protected attempt(owner: string, leaseMs: number, latch: string): Promise<number | null> {
    return acquireLock(this.context.redis, [this.keys.lock, latch], [leaseMs, owner, this.markOf(latch)]);
  }

  protected release(owner: string, latch: string, latchMs: number, any: boolean): Promise<0 | 1 | null> {
    const publish = this.context.publishCommand();
    // Known after the client's first calls: the release goes out without waiting for anything.
    if (typeof publish !== 'string') return publish.then(() => this.release(owner, latch, latchMs, any));
    return releaseLock(
      this.context.redis,
      [this.keys.lock, this.keys.channel, latch],
      [owner, latchMs, publish, any ? 'any' : 'marked', this.markOf(latch)],
    );
  }

  protected async withdraw(owner: string, latch: string, latchMs: number): Promise<unknown> {
    return withdrawLock(
      this.context.redis,
      [this.keys.lock, this.keys.channel, latch],
      [owner, latchMs, await this.context.publishCommand(), this.markOf(latch)],
    );
  }

  protected async forceRelease(): Promise<boolean> {
    const publish = await this.context.publishCommand();
    const keys: [string, string] = [this.keys.lock, this.keys.channel];
    return (await forceReleaseLock(this.context.redis, keys, [publish])) === 1;
  }

  /** Waiters listen on the lock's release channel (Redisson's), shared per client. */
  protected async openWakeSource(_owner: string, limits: StepLimits): Promise<WakeSource> {
    return (await this.context.subscriber(this.name, limits)).subscribe(this.keys.channel, limits);
  }
}
