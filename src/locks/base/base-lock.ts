import { ClientClosedError, LockTimeoutError } from '../../errors';
import type { Hold } from '../../ownership/hold-book';
import { onAbort } from '../../util/abort';
import { currentTask, Frame, runAsHandle, runInFrame } from '../../ownership/owner';
import { isReleaseUnanswered } from '../../protocol/resend';
import { parseLockOptions } from '../../util/validate';
import { lockHold } from './lock-hold';
import type { Held, LockHold, RLock, WithLockOptions } from '../types';
import { runHeld } from '../../util/run-held';
import { AcquiringLock } from './acquiring-lock';

export { newHandleOwner, type HandleOwner } from './lock-handle';

/**
 * The class every lock kind extends, the last of four layers (see LockHandle for what a kind
 * supplies): it runs bodies (withLock, hold), answers the queries, and is what a group lock asks
 * of its members.
 */
export abstract class BaseLock extends AcquiringLock implements RLock {
  async isLocked(): Promise<boolean> {
    this.throwIfClosed('closed', 'isLocked');
    return (await this.call('isLocked', () => this.context.redis.exists(this.hashKey))) === 1;
  }

  async isHeldByCurrentTask(): Promise<boolean> {
    this.throwIfClosed('closed', 'isHeldByCurrentTask');
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    return (
      (await this.call('isHeldByCurrentTask', () => this.context.redis.hexists(this.hashKey, owner))) === 1
    );
  }

  async getHoldCount(): Promise<number> {
    this.throwIfClosed('closed', 'getHoldCount');
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    const count = await this.call('getHoldCount', () => this.context.redis.hget(this.hashKey, owner));
    return count === null || count === undefined ? 0 : Number(count);
  }

  async remainTimeToLive(): Promise<number> {
    this.throwIfClosed('closed', 'remainTimeToLive');
    return this.call('remainTimeToLive', () => this.context.redis.pttl(this.hashKey));
  }

  /**
   * Acquires, runs fn in a frame of its own, always releases. Nested calls inside fn re-enter at
   * once; a sibling branch of the same task that enters this lock meanwhile waits until fn is done.
   * Outside a task it acts for this handle, as lock() does (so it re-enters what the handle holds),
   * and fn runs as a task of the handle's owner.
   */
  async withLock<T>(fn: (held: Held) => Promise<T> | T, options?: WithLockOptions): Promise<T> {
    if (typeof fn !== 'function') {
      throw Object.assign(new TypeError('fn must be a function'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    const parsed = parseLockOptions(options);
    const waitTime = parsed.waitTime ?? -1;
    const run = async (): Promise<T> => {
      const owner = this.currentOwner();
      const body = new Frame(this.currentFrame());
      const acquired = await this.acquire(waitTime, parsed.leaseTime, parsed.signal, { body });
      if (acquired === false) throw new LockTimeoutError(this.name, waitTime);
      const { guard, dispose } = this.watchHold(owner);
      // The caller's signal aborts the held one too (without AbortSignal.any, which keeps a little
      // for every call made with a long-lived signal).
      const userSignal = parsed.signal;
      const stopListening = userSignal && onAbort(userSignal, () => guard.abort(userSignal.reason));
      const done = this.context.trackBody(body);
      const held =
        acquired.token === undefined
          ? { signal: guard.signal }
          : { signal: guard.signal, token: acquired.token };
      // A release after the body did its work that Redis did not answer goes on in the background,
      // and the result stands (a caller that retries on errors must not run the body twice).
      return runHeld(
        () => runInFrame(body, () => fn(held)),
        () => {
          stopListening?.();
          dispose();
          done();
        },
        (afterWork) => this.releaseOwn(owner, acquired.hold, afterWork),
      );
    };
    return currentTask() ? run() : runAsHandle(this, this.handleOwner, this.handleFrame, run);
  }

  /**
   * Acquires as lock() does, for the current owner, and hands back the hold: its release gives
   * back this very hold (not whatever is newest). Calls nested after it in the same owner's code
   * re-enter, as after lock().
   */
  async hold(options?: WithLockOptions): Promise<LockHold> {
    const parsed = parseLockOptions(options);
    const waitTime = parsed.waitTime ?? -1;
    const owner = this.currentOwner();
    const acquired = await this.acquire(waitTime, parsed.leaseTime, parsed.signal);
    if (acquired === false) throw new LockTimeoutError(this.name, waitTime);
    const { guard, dispose } = this.watchHold(owner);
    return lockHold(guard.signal, acquired.token, async () => {
      dispose();
      // close() gave back every hold already (and aborted the signal): nothing left to release.
      if (this.context.closed.aborted) return;
      await this.releaseOwn(owner, acquired.hold);
    });
  }

  /**
   * withLock's release: its own hold (not whatever is newest), then the replica check. `afterWork`:
   * the body did its work, and a release that went unanswered (it goes on in the background, see
   * releasedOrResent in protocol/resend.ts) does not fail it; there is nothing for replicas to have then.
   */
  protected async releaseOwn(owner: string, hold: Hold, afterWork = false): Promise<void> {
    if (this.context.closed.aborted) {
      throw new ClientClosedError(
        `the LockClient was closed while this withLock body ran: close() released lock "${this.name}" ` +
          'before the body was done (its signal had aborted)',
        { lockName: this.name, operation: 'release' },
      );
    }
    try {
      await this.releaseHold(owner, hold);
    } catch (error) {
      if (afterWork && isReleaseUnanswered(error)) return;
      throw error;
    }
    if (this.context.replicaAcks) await this.requireReplicas('release');
  }

  /**
   * Watches the current owner's hold on this lock (for a group lock): the signal aborts when the
   * lease is lost. Undefined when the owner holds nothing here.
   */
  watchCurrentHold(): { signal: AbortSignal; dispose: () => void } | undefined {
    const owner = this.currentOwner();
    if (!this.context.book.get(this.name, owner)) return undefined;
    const { guard, dispose } = this.watchHold(owner);
    return { signal: guard.signal, dispose };
  }

  /**
   * A controller that aborts when `owner`'s hold on this lock is lost (a plain one when the book
   * has no entry), and how to stop watching.
   */
  protected watchHold(owner: string): { guard: AbortController; dispose: () => void } {
    const { book } = this.context;
    const entry = book.get(this.name, owner);
    const guard = entry ? book.guard(entry) : new AbortController();
    return { guard, dispose: () => entry?.guards?.delete(guard) };
  }

  /**
   * Cuts `hold`, which a group lock took of this member with a longer lease, to leaseTime from now
   * (the group's last step). Only when it is the owner's one hold here: an owner that held this
   * member before keeps the ttl it has, as at any re-entry (a short inner lease never cuts off an
   * outer hold). A member Redis no longer has for the owner is a lost lease. Within `budget` ms
   * when that is less than commandTimeout (what is left of the group's wait).
   */
  async shortenLease(hold: Hold, leaseTime: number, budget?: number): Promise<void> {
    const { book } = this.context;
    const owner = this.currentOwner();
    const before = book.get(this.name, owner);
    if (before?.holds.length !== 1 || before.holds[0] !== hold) return;
    const sentAt = performance.now();
    const kept = await this.call(
      'renew',
      () => this.setLease(owner, leaseTime),
      budget === undefined ? undefined : { budget: Math.min(budget, this.context.calls.commandTimeout) },
    );
    const entry = book.get(this.name, owner);
    // Released meanwhile (the group gave up): nothing left to cut.
    if (entry !== before || !entry.holds.includes(hold)) return;
    if (kept === 1) book.setLease(entry, hold, leaseTime, sentAt + leaseTime);
    else book.lose(entry, 'not-in-redis', 'Redis no longer had it when its lease was set');
  }

  /**
   * A group lock's attempt at this member: tryLock, except that any Redis failure fails it at once
   * (the group decides what to do), the group hears when the member waits for another holder,
   * and a lost lease is the group's to report (see GroupLock).
   */
  async tryLockAsMember(options: {
    waitTime: number;
    leaseTime: number;
    signal: AbortSignal;
    body?: Frame;
    onHeldElsewhere: () => void;
    /** The budget of a single attempt (waitTime 0), when the group's wait leaves less than commandTimeout. */
    budget?: number;
  }): Promise<Hold | false> {
    const { waitTime, leaseTime, signal, body, onHeldElsewhere, budget } = options;
    const how = { body, quiet: true, failFast: true, onHeldElsewhere, budget };
    const acquired = await this.acquire(waitTime, leaseTime, signal, how);
    return acquired === false ? false : acquired.hold;
  }

  /** A group lock's release of the hold it took of this member (see tryLockAsMember). */
  async releaseAsMember(hold: Hold): Promise<void> {
    this.throwIfClosed('closed', 'release');
    await this.releaseHold(this.currentOwner(), hold, true);
    if (this.context.replicaAcks) await this.requireReplicas('release');
  }
}
