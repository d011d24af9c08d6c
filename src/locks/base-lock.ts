import { LockNotHeldError, LockNotReplicatedError, LockTimeoutError } from '../errors';
import type { Hold } from '../holds';
import { isPassing, type CallLimits, type Lane } from '../redis-call';
import { retryPause } from '../timing';
import { holdLatchKey, lockKeys } from '../keys';
import { currentTask, nextOwnerNumber, ownerId, runInCurrentOrNewTask } from '../owner';
import { renewLocks } from '../scripts';
import { checkLeaseTime, checkLockName, checkWaitTime, isOptionsObject, parseLockOptions } from '../validate';
import { acquireOrWait, type AttemptKind, type StepLimits, type WakeSource } from '../wait';
import type { LockContext } from './context';
import type { Held, LockOptions, RLock, TryLockOptions, WithLockOptions } from './types';

type GiveUp = (owner: string) => Promise<unknown>;

/**
 * Everything the lock kinds share: argument rules, who the owner is, the book of holds, the wait
 * loop, withLock. A kind supplies its protocol: how one attempt, one release and a forced delete
 * run in Redis, and where its waiters' wake-ups come from.
 */
export abstract class BaseLock implements RLock {
  readonly name: string;
  /** The lock hash, whose field per owner holds the hold count: every kind keeps it at the name (Redisson's layout). */
  protected readonly hashKey: string;
  /** The owner number used outside any task: the handle itself owns the lock. */
  private readonly handleOwner = nextOwnerNumber();

  constructor(
    protected readonly context: LockContext,
    name: unknown,
  ) {
    this.name = checkLockName(name);
    this.hashKey = lockKeys(this.name).lock;
  }

  /** A fresh latch key for one acquire request (and later the release of its hold). */
  protected newLatch(): string {
    return holdLatchKey(this.name, this.context.newRequestId());
  }

  /** One attempt: null when acquired or re-entered, else the holder's remaining ttl in ms. */
  protected abstract attempt(
    owner: string,
    leaseMs: number,
    latch: string,
    kind: AttemptKind,
  ): Promise<number | null>;
  /** 1 when the owner's last hold is gone, 0 when it still holds, null when it held nothing. */
  protected abstract release(owner: string, latch: string, latchMs: number): Promise<0 | 1 | null>;
  protected abstract forceRelease(): Promise<boolean>;
  /** Where this owner's wake-ups come from while it waits; ready within the limits' budget. */
  protected abstract openWakeSource(owner: string, limits: StepLimits): Promise<WakeSource>;
  /** Whether the wake source must be open before the first attempt. */
  protected abstract readonly wakeSourceFirst: boolean;
  /** Leaves whatever a wait left behind (a queue place); nothing for a plain lock. */
  protected giveUp?(owner: string): Promise<unknown>;
  /** Takes over a lock a release handed to this owner, with its own lease; false when lost. */
  protected confirmHandoff?(owner: string, leaseMs: number): Promise<boolean>;

  lock(leaseTime?: number): Promise<void>;
  lock(options: LockOptions): Promise<void>;
  async lock(arg?: number | LockOptions): Promise<void> {
    const { leaseTime, signal } = isOptionsObject(arg)
      ? parseLockOptions(arg)
      : { leaseTime: arg === undefined ? -1 : checkLeaseTime(arg), signal: undefined };
    await this.acquire(-1, leaseTime, signal);
  }

  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, leaseTime?: number): Promise<boolean>;
  tryLock(options: TryLockOptions): Promise<boolean>;
  async tryLock(arg?: number | TryLockOptions, leaseTime?: number): Promise<boolean> {
    if (arg !== undefined && !isOptionsObject(arg)) {
      const acquired = await this.acquire(
        checkWaitTime(arg),
        leaseTime === undefined ? -1 : checkLeaseTime(leaseTime),
      );
      return acquired !== false;
    }
    const options = parseLockOptions(arg);
    return (await this.acquire(options.waitTime ?? 0, options.leaseTime, options.signal)) !== false;
  }

  async unlock(): Promise<void> {
    this.throwIfClosed();
    await this.releaseNewestHold();
    await this.requireReplicas('release');
  }

  /**
   * Releases the current owner's newest hold (unlock() without the replica check). A release that
   * Redis did not answer keeps its hold aside: unlock() again sends the same release (its latch
   * makes it count once), and close() sends it too.
   */
  private async releaseNewestHold(): Promise<void> {
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    const hold = this.context.book.takeForRelease(this.name, owner);
    const latch = hold?.latch ?? this.newLatch();
    const latchMs = this.latchLifetime(hold);
    let result: 0 | 1 | null;
    try {
      result = await this.call('release', () => this.release(owner, latch, latchMs));
    } catch (error) {
      if (hold && isPassing(error)) this.context.book.keepUnreleased(this.name, owner, hold, latchMs);
      throw error;
    }
    const rest = this.context.book.get(this.name, owner);
    if (result === null) {
      if (rest) this.context.book.lose(rest, 'Redis no longer had its holds');
      throw new LockNotHeldError(this.name, owner);
    }
    if (result === 1 && rest) this.context.book.lose(rest, 'Redis had fewer holds than this client counted');
  }

  /** With waitForReplicas: throws LockNotReplicatedError when too few replicas have the last write. */
  private async requireReplicas(operation: 'acquire' | 'release'): Promise<void> {
    if (!this.context.replicaAcks) return;
    const { acknowledged, required } = await this.context.replicaAcks(this.name, this.hashKey);
    if (acknowledged < required)
      throw new LockNotReplicatedError(this.name, operation, acknowledged, required);
  }

  async forceUnlock(): Promise<boolean> {
    this.throwIfClosed();
    for (const entry of this.context.book.holdersOf(this.name)) {
      this.context.book.lose(entry, 'forceUnlock() deleted it');
    }
    return this.call('forceUnlock', () => this.forceRelease());
  }

  async isLocked(): Promise<boolean> {
    this.throwIfClosed();
    return (await this.call('isLocked', () => this.context.redis.exists(this.hashKey))) === 1;
  }

  async isHeldByCurrentTask(): Promise<boolean> {
    this.throwIfClosed();
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    return (
      (await this.call('isHeldByCurrentTask', () => this.context.redis.hexists(this.hashKey, owner))) === 1
    );
  }

  async getHoldCount(): Promise<number> {
    this.throwIfClosed();
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    const count = await this.call('getHoldCount', () => this.context.redis.hget(this.hashKey, owner));
    return count === null || count === undefined ? 0 : Number(count);
  }

  async remainTimeToLive(): Promise<number> {
    this.throwIfClosed();
    return this.call('remainTimeToLive', () => this.context.redis.pttl(this.hashKey));
  }

  async withLock<T>(fn: (held: Held) => Promise<T> | T, options?: WithLockOptions): Promise<T> {
    if (typeof fn !== 'function') {
      throw Object.assign(new TypeError('fn must be a function'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    const parsed = parseLockOptions(options);
    const waitTime = parsed.waitTime ?? -1;
    return runInCurrentOrNewTask(async () => {
      const acquired = await this.acquire(waitTime, parsed.leaseTime, parsed.signal);
      if (acquired === false) throw new LockTimeoutError(this.name, waitTime);
      const entry = this.context.book.get(this.name, this.currentOwner());
      const guard = entry ? this.context.book.guard(entry) : new AbortController();
      const signal = parsed.signal ? AbortSignal.any([guard.signal, parsed.signal]) : guard.signal;
      let result: T;
      try {
        result = await fn(acquired.token === undefined ? { signal } : { signal, token: acquired.token });
      } catch (error) {
        // The callback's error is what the caller needs; a failed release must not hide it.
        await this.unlock().catch(() => undefined);
        throw error;
      } finally {
        entry?.guards.delete(guard);
      }
      await this.unlock();
      return result;
    });
  }

  /**
   * Watches the current owner's hold on this lock (for a group lock's withLock): the signal aborts
   * when the lease is lost. Undefined when the owner holds nothing here.
   */
  watchCurrentHold(): { signal: AbortSignal; dispose: () => void } | undefined {
    const entry = this.context.book.get(this.name, this.currentOwner());
    if (!entry) return undefined;
    const guard = this.context.book.guard(entry);
    return { signal: guard.signal, dispose: () => entry.guards.delete(guard) };
  }

  /** Sets the lease of the current owner's newest hold to leaseTime, from now (a group lock's last step). */
  async shortenLease(leaseTime: number): Promise<void> {
    const owner = this.currentOwner();
    const sentAt = performance.now();
    const [kept] = await this.call('renew', () =>
      renewLocks(this.context.redis, [this.hashKey], [leaseTime, owner]),
    );
    const entry = this.context.book.get(this.name, owner);
    if (entry && kept === 1) this.context.book.setNewestLease(entry, leaseTime, sentAt + leaseTime);
  }

  /** The fencing token an acquiring attempt was given, for lock kinds that issue them. */
  protected tokenOf(_latch: string): number | undefined {
    return undefined;
  }

  /**
   * A holder paused past its lease (a long GC or event-loop stall, a stopped process) learns of
   * the loss before its next call through this lock (unlock, re-entry, hold queries) sends
   * anything: the timers that would have told it may not have run yet.
   */
  private noticeOverdueLease(owner: string): void {
    const entry = this.context.book.get(this.name, owner);
    if (entry && entry.leaseEnd <= performance.now()) {
      this.context.book.lose(entry, 'its lease ran out while the holder was not running (paused or stalled)');
    }
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
    onHeldElsewhere: () => void;
  }): Promise<boolean> {
    const { waitTime, leaseTime, signal, onHeldElsewhere } = options;
    const how = { quiet: true, failFast: true, onHeldElsewhere };
    return (await this.acquire(waitTime, leaseTime, signal, how)) !== false;
  }

  /** The owner id the current caller acts for on this lock. */
  currentOwnerId(): string {
    return this.currentOwner();
  }

  /** Takes the lock for the current owner; false when waitTime passed first. */
  protected async acquire(
    waitTime: number,
    leaseTime: number,
    signal?: AbortSignal,
    how: { quiet?: boolean; failFast?: boolean; onHeldElsewhere?: () => void } = {},
  ): Promise<false | { token?: number }> {
    this.throwIfClosed();
    const { context } = this;
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    const leaseMs = leaseTime < 0 ? context.watchdogTimeout : leaseTime;
    /** This wait's attempts go out one at a time (see Lane). */
    const lane: Lane = {};
    let granted: { latch: string; sentAt: number } | undefined;
    const outcome = await acquireOrWait({
      attempt: async (kind, limits) => {
        const latch = this.newLatch();
        const sentAt = performance.now();
        const ttl = await this.call('acquire', () => this.attempt(owner, leaseMs, latch, kind), {
          ...limits,
          lane,
          endsWithClose: true,
          // Answered after the caller stopped waiting for it: nobody takes this hold, give it back.
          onLate: (late) => {
            if (late === null) void this.giveBack(owner, latch, leaseMs);
          },
        });
        if (ttl === null) granted = { latch, sentAt };
        return ttl;
      },
      undoGrant: () => (granted ? this.giveBack(owner, granted.latch, leaseMs) : Promise.resolve()),
      openWakeSource: (limits) => this.openWakeSource(owner, limits),
      wakeSourceFirst: this.wakeSourceFirst,
      giveUp:
        this.giveUp &&
        ((limits) => this.call('giveUp', () => (this.giveUp as GiveUp).call(this, owner), limits)),
      waitTime,
      commandTimeout: context.calls.commandTimeout,
      signal,
      closing: context.closing,
      maxSleep: context.watchdogTimeout,
      onRetry: (error, retryInMs) =>
        context.reportRedisError({ name: this.name, operation: 'acquire', error, retryInMs }),
      failFast: how.failFast,
      onHeldElsewhere: how.onHeldElsewhere,
    });
    if (!outcome) return false;
    let { latch, sentAt } = granted ?? { latch: this.newLatch(), sentAt: performance.now() };
    const token = this.tokenOf(latch);
    if (outcome === 'handoff') {
      // The release that handed the lock over granted it provisionally; a fresh latch serves its
      // release. The lock is the caller's now: confirming it runs in the background, ahead of any
      // later command on the connection, and a failed confirmation is a lost lock.
      latch = this.newLatch();
      sentAt = performance.now();
      void this.confirm(owner, leaseMs);
    }
    context.book.add(this.name, owner, { latch, leaseTime }, sentAt + leaseMs, how.quiet);
    if (leaseTime < 0) context.watchdog.start();
    try {
      await this.requireReplicas('acquire');
    } catch (error) {
      // A hold a failover could lose is not handed out: give it back (without waiting for the
      // replicas a second time), then say why.
      await this.releaseNewestHold().catch(() => undefined);
      throw error;
    }
    return { token };
  }

  /**
   * Gives back a hold nobody will use (granted after its caller stopped waiting). Redis may be the
   * reason the caller stopped, so this keeps trying through passing failures until the hold would
   * have expired anyway; its latch makes repeated tries count once. Runs in the background.
   */
  private async giveBack(owner: string, latch: string, leaseMs: number): Promise<void> {
    const until = performance.now() + leaseMs;
    for (let tries = 1; ; tries += 1) {
      try {
        await this.call('giveBack', () => this.release(owner, latch, leaseMs));
        return;
      } catch (error) {
        if (!isPassing(error)) return;
      }
      const pause = retryPause(tries);
      if (performance.now() + pause >= until) return;
      await new Promise((resolve) => setTimeout(resolve, pause).unref());
    }
  }

  private async confirm(owner: string, leaseMs: number): Promise<void> {
    let confirmed = true;
    try {
      const confirmHandoff = this.confirmHandoff;
      if (confirmHandoff)
        confirmed = await this.call('confirm', () => confirmHandoff.call(this, owner, leaseMs));
    } catch (error) {
      // Unanswered: the provisional grant holds the lock (for fairLockWaitTimeout) and the
      // watchdog or the lease takes over from there.
      this.context.reportRedisError({ name: this.name, operation: 'confirm', error });
    }
    const entry = this.context.book.get(this.name, owner);
    if (!confirmed && entry) this.context.book.lose(entry, 'the hand-off from the previous holder was lost');
  }

  /** Runs one Redis command of this lock within its budget (see RedisCalls). */
  protected call<T>(operation: string, send: () => Promise<T>, limits?: CallLimits<T>): Promise<T> {
    return this.context.calls.run(this.name, operation, send, limits);
  }

  /** How long the latch of a released hold remembers the release, in ms. */
  private latchLifetime(hold: Hold | undefined): number {
    return hold && hold.leaseTime > 0 ? hold.leaseTime : this.context.watchdogTimeout;
  }

  protected currentOwner(): string {
    const task = currentTask();
    return ownerId(this.context.clientId, task ? task.ownerNumber : this.handleOwner);
  }

  private throwIfClosed(): void {
    this.context.closing.throwIfAborted();
  }
}
