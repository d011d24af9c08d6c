import { LockNotHeldError, LockNotReplicatedError, LockTimeoutError } from '../errors';
import { holdLatchKey, lockKeys } from '../keys';
import { currentTask, nextOwnerNumber, ownerId, runInCurrentOrNewTask } from '../owner';
import { renewLocks } from '../scripts';
import { checkLeaseTime, checkLockName, checkWaitTime, isOptionsObject, parseLockOptions } from '../validate';
import { acquireOrWait, type AttemptKind, type WakeSource } from '../wait';
import type { LockContext } from './context';
import type { Held, LockOptions, RLock, TryLockOptions, WithLockOptions } from './types';

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
  /** Where this owner's wake-ups come from while it waits. */
  protected abstract openWakeSource(owner: string): Promise<WakeSource>;
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

  /** Releases the current owner's newest hold (unlock() without the replica check). */
  private async releaseNewestHold(): Promise<void> {
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    const hold = this.context.book.takeForRelease(this.name, owner);
    const latch = hold?.latch ?? this.newLatch();
    const latchMs = hold && hold.leaseTime > 0 ? hold.leaseTime : this.context.watchdogTimeout;
    const result = await this.release(owner, latch, latchMs);
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
    const { acknowledged, required } = await this.context.replicaAcks(this.hashKey);
    if (acknowledged < required)
      throw new LockNotReplicatedError(this.name, operation, acknowledged, required);
  }

  async forceUnlock(): Promise<boolean> {
    this.throwIfClosed();
    for (const entry of this.context.book.holdersOf(this.name)) {
      this.context.book.lose(entry, 'forceUnlock() deleted it');
    }
    return this.forceRelease();
  }

  async isLocked(): Promise<boolean> {
    this.throwIfClosed();
    return (await this.context.redis.exists(this.hashKey)) === 1;
  }

  async isHeldByCurrentTask(): Promise<boolean> {
    this.throwIfClosed();
    this.noticeOverdueLease(this.currentOwner());
    return (await this.context.redis.hexists(this.hashKey, this.currentOwner())) === 1;
  }

  async getHoldCount(): Promise<number> {
    this.throwIfClosed();
    this.noticeOverdueLease(this.currentOwner());
    const count = await this.context.redis.hget(this.hashKey, this.currentOwner());
    return count === null || count === undefined ? 0 : Number(count);
  }

  async remainTimeToLive(): Promise<number> {
    this.throwIfClosed();
    return this.context.redis.pttl(this.hashKey);
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
    const [kept] = await renewLocks(this.context.redis, [this.hashKey], [leaseTime, owner]);
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

  /** Takes the lock for the current owner; false when waitTime passed first. */
  protected async acquire(
    waitTime: number,
    leaseTime: number,
    signal?: AbortSignal,
  ): Promise<false | { token?: number }> {
    this.throwIfClosed();
    const { context } = this;
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    const leaseMs = leaseTime < 0 ? context.watchdogTimeout : leaseTime;
    let latch = '';
    let sentAt = 0;
    const outcome = await acquireOrWait({
      attempt: (kind) => {
        latch = this.newLatch();
        sentAt = performance.now();
        return this.attempt(owner, leaseMs, latch, kind);
      },
      undoGrant: () => this.release(owner, latch, leaseMs),
      openWakeSource: () => this.openWakeSource(owner),
      wakeSourceFirst: this.wakeSourceFirst,
      giveUp: this.giveUp && (() => (this.giveUp as (owner: string) => Promise<unknown>)(owner)),
      waitTime,
      signal,
      closing: context.closing,
      maxSleep: context.watchdogTimeout,
    });
    if (!outcome) return false;
    const token = this.tokenOf(latch);
    if (outcome === 'handoff') {
      // The release that handed the lock over granted it provisionally; a fresh latch serves its
      // release. The lock is the caller's now: confirming it runs in the background, ahead of any
      // later command on the connection, and a failed confirmation is a lost lock.
      latch = this.newLatch();
      sentAt = performance.now();
      void this.confirm(owner, leaseMs);
    }
    context.book.add(this.name, owner, { latch, leaseTime }, sentAt + leaseMs);
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

  private async confirm(owner: string, leaseMs: number): Promise<void> {
    const confirmed = await this.confirmHandoff?.(owner, leaseMs).catch(() => true);
    const entry = this.context.book.get(this.name, owner);
    if (confirmed === false && entry)
      this.context.book.lose(entry, 'the hand-off from the previous holder was lost');
  }

  protected currentOwner(): string {
    const task = currentTask();
    return ownerId(this.context.clientId, task ? task.ownerNumber : this.handleOwner);
  }

  private throwIfClosed(): void {
    this.context.closing.throwIfAborted();
  }
}
