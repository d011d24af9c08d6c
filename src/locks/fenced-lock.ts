import { fencingTokenKey } from '../protocol/keys';
import { acquireFencedLock } from '../protocol/scripts';
import { checkLeaseTime, checkWaitTime } from '../util/validate';
import type { LockContext } from '../context';
import { ReentrantLock } from './reentrant-lock';
import type { FencedHeld, LockHold, RFencedLock, WithLockOptions } from './types';

/**
 * The reentrant lock plus a fencing token (Redisson RFencedLock layout): every acquisition,
 * re-entries included, takes a token larger than all before it. A store that remembers the largest
 * token it has seen and refuses smaller ones cannot be written by a holder whose lease ran out
 * while it was paused. See docs/reliability.md.
 */
export class FencedLock extends ReentrantLock implements RFencedLock {
  override readonly kind = 'fenced';
  /** Its attempts are its own script's, which keeps no entry among the lock's waiters. */
  protected override readonly wokenOneAtATime = false;
  private readonly tokenKey: string;
  /** Tokens of attempts that acquired, by their latch, until acquire() reads them. */
  private readonly granted = new Map<string, number>();

  constructor(context: LockContext, name: unknown) {
    super(context, name);
    this.tokenKey = fencingTokenKey(this.name, this.slot);
  }

  async lockAndGetToken(leaseTime?: number): Promise<number> {
    return (await this.acquireFenced(-1, leaseTime === undefined ? -1 : checkLeaseTime(leaseTime))) as number;
  }

  async tryLockAndGetToken(waitTime?: number, leaseTime?: number): Promise<number | null> {
    return this.acquireFenced(
      waitTime === undefined ? 0 : checkWaitTime(waitTime),
      leaseTime === undefined ? -1 : checkLeaseTime(leaseTime),
    );
  }

  override withLock<T>(fn: (held: FencedHeld) => Promise<T> | T, options?: WithLockOptions): Promise<T> {
    if (typeof fn !== 'function') return super.withLock(fn, options);
    // Every acquisition of this kind carries its token (see acquire()).
    return super.withLock((held) => fn(held as FencedHeld), options);
  }

  override async hold(options?: WithLockOptions): Promise<LockHold & { token: number }> {
    // Every acquisition of this kind carries its token (see acquire()).
    return (await super.hold(options)) as LockHold & { token: number };
  }

  async getToken(): Promise<number | null> {
    this.throwIfClosed('closed', 'getToken');
    const token = await this.call('getToken', () => this.context.redis.get(this.tokenKey));
    return token === null || token === undefined ? null : Number(token);
  }

  protected override async attempt(owner: string, leaseMs: number, latch: string): Promise<number | null> {
    const [acquired, value] = await acquireFencedLock(
      this.context.redis,
      [this.hashKey, latch, this.tokenKey],
      [leaseMs, owner, this.markOf(latch)],
    );
    if (acquired !== 1) return Number(value);
    this.granted.set(latch, Number(value));
    return null;
  }

  /** A grant given back (late, lapsed, not taken) hands out no token: its entry goes with it. */
  override withdrawInBackground(owner: string, latch: string, leaseMs: number): Promise<void> {
    this.granted.delete(latch);
    return super.withdrawInBackground(owner, latch, leaseMs);
  }

  protected override tokenOf(latch: string): number | undefined {
    const token = this.granted.get(latch);
    this.granted.delete(latch);
    return token;
  }

  private async acquireFenced(waitTime: number, leaseTime: number): Promise<number | null> {
    const acquired = await this.acquire(waitTime, leaseTime);
    return acquired === false ? null : (acquired.token ?? null);
  }
}
