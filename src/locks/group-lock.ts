import { LockNotHeldError, LockTimeoutError } from '../errors';
import { runInCurrentOrNewTask } from '../owner';
import {
  checkLeaseTime,
  checkWaitTime,
  isOptionsObject,
  parseLockOptions as parseOptions,
} from '../validate';
import { BaseLock } from './base-lock';
import type { Held, LockOptions, RLock, TryLockOptions, WithLockOptions } from './types';

/**
 * One lock made of several (Redisson's RedissonMultiLock and RedissonRedLock): members are taken
 * in order, each within its share of the time left; a member that cannot be taken costs the
 * attempt when fewer than `quorum` could still be held, and then every member taken so far is
 * given back and the attempt starts over, so two groups never deadlock.
 */
export interface GroupRules {
  /** How many members must be held for the group to be held. */
  quorum: number;
  /** How long one member may be waited for, given the time left for the whole attempt. */
  memberWait(timeLeft: number, members: number): number;
  /** Whether a member that fails with an error (its server is down) only counts as not taken. */
  memberErrorsAreFailures: boolean;
  /**
   * Time the quorum must still have after it was reached (RedLock's validity check): the lease
   * minus the time taking it took minus the clocks' drift. Null: no check.
   */
  validity?(leaseMs: number, elapsedMs: number): number;
  /** The lease the validity check assumes for watchdog locks. */
  watchdogLease: number;
  label: string;
}

/** How long lock() waits for each member before it lets go of all and starts over (Redisson's 1.5 s). */
const LOCK_ROUND_PER_MEMBER_MS = 1_500;

/**
 * While it already holds members, an attempt waits for the next one only briefly (50-150 ms, at
 * random): two groups taking the same locks in opposite orders each hold what the other waits for,
 * and must not both wait out their whole time. Waiting for the first member costs nothing.
 */
const holdingWait = (): number => 50 + Math.random() * 100;

export class GroupLock implements RLock {
  readonly name: string;

  constructor(
    private readonly members: RLock[],
    private readonly rules: GroupRules,
  ) {
    if (members.length === 0) {
      throw Object.assign(new TypeError('locks must name at least one lock'), {
        code: 'ERR_INVALID_ARG_TYPE',
      });
    }
    for (const member of members) {
      if (!(member instanceof BaseLock)) {
        throw Object.assign(
          new TypeError('locks must be locks made by a LockClient (getLock, getFairLock, ...)'),
          {
            code: 'ERR_INVALID_ARG_TYPE',
          },
        );
      }
    }
    this.name = `${rules.label}(${members.map((member) => member.name).join(', ')})`;
  }

  lock(leaseTime?: number): Promise<void>;
  lock(options: LockOptions): Promise<void>;
  async lock(arg?: number | LockOptions): Promise<void> {
    const { leaseTime, signal } = isOptionsObject(arg)
      ? parseOptions(arg)
      : { leaseTime: arg === undefined ? -1 : checkLeaseTime(arg), signal: undefined };
    const round = this.members.length * LOCK_ROUND_PER_MEMBER_MS;
    while (!(await this.acquire(round, leaseTime, signal)));
  }

  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, leaseTime?: number): Promise<boolean>;
  tryLock(options: TryLockOptions): Promise<boolean>;
  async tryLock(arg?: number | TryLockOptions, leaseTime?: number): Promise<boolean> {
    if (arg !== undefined && !isOptionsObject(arg)) {
      return this.acquire(checkWaitTime(arg), leaseTime === undefined ? -1 : checkLeaseTime(leaseTime));
    }
    const options = parseOptions(arg);
    return this.acquire(options.waitTime ?? 0, options.leaseTime, options.signal);
  }

  /** Releases every member; LockNotHeldError only when fewer than the quorum were held. */
  async unlock(): Promise<void> {
    const results = await Promise.allSettled(this.members.map((member) => member.unlock()));
    const released = results.filter((result) => result.status === 'fulfilled').length;
    const failure = results.find(
      (result): result is PromiseRejectedResult =>
        result.status === 'rejected' && !(result.reason instanceof LockNotHeldError),
    );
    if (failure && this.rules.quorum === this.members.length) throw failure.reason;
    if (released < this.rules.quorum) {
      if (failure) throw failure.reason;
      throw new LockNotHeldError(this.name, 'the current owner');
    }
  }

  async forceUnlock(): Promise<boolean> {
    const results = await Promise.all(this.members.map((member) => member.forceUnlock()));
    return results.some(Boolean);
  }

  async isLocked(): Promise<boolean> {
    return this.countTrue(await this.ask((member) => member.isLocked(), false));
  }

  async isHeldByCurrentTask(): Promise<boolean> {
    return this.countTrue(await this.ask((member) => member.isHeldByCurrentTask(), false));
  }

  /** The hold count the quorum shares (the quorum-th largest of the members'). */
  async getHoldCount(): Promise<number> {
    return this.quorumValue(await this.ask((member) => member.getHoldCount(), 0));
  }

  /** The ttl the quorum shares (the quorum-th largest of the members'); -2 when not held. */
  async remainTimeToLive(): Promise<number> {
    const ttls = await this.ask((member) => member.remainTimeToLive(), -2);
    const forever = Number.MAX_SAFE_INTEGER;
    const value = this.quorumValue(ttls.map((ttl) => (ttl === -1 ? forever : ttl)));
    return value === forever ? -1 : value < 0 ? -2 : value;
  }

  async withLock<T>(fn: (held: Held) => Promise<T> | T, options?: WithLockOptions): Promise<T> {
    if (typeof fn !== 'function') {
      throw Object.assign(new TypeError('fn must be a function'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    const parsed = parseOptions(options);
    const waitTime = parsed.waitTime ?? -1;
    return runInCurrentOrNewTask(async () => {
      if (waitTime < 0) await this.lock({ leaseTime: parsed.leaseTime, signal: parsed.signal });
      else if (!(await this.acquire(waitTime, parsed.leaseTime, parsed.signal))) {
        throw new LockTimeoutError(this.name, waitTime);
      }
      const { signal, release } = this.watchHolds(parsed.signal);
      let result: T;
      try {
        result = await fn({ signal });
      } catch (error) {
        await this.unlock().catch(() => undefined);
        throw error;
      } finally {
        release();
      }
      await this.unlock();
      return result;
    });
  }

  /** One attempt of up to waitTime ms (-1: members are tried once each, no waiting). */
  private async acquire(waitTime: number, leaseTime: number, signal?: AbortSignal): Promise<boolean> {
    const started = performance.now();
    const deadline = waitTime < 0 ? Infinity : started + waitTime;
    // A member waited for must not run out before the others are taken: with a fixed lease and a
    // wait, members take a longer lease first and are cut to the asked lease at the end.
    const memberLease = leaseTime < 0 ? -1 : waitTime > 0 ? Math.max(leaseTime, 2 * waitTime) : leaseTime;
    const allowedFailures = this.members.length - this.rules.quorum;
    for (;;) {
      signal?.throwIfAborted();
      const attemptStarted = performance.now();
      const taken: RLock[] = [];
      let failures = 0;
      for (const member of this.members) {
        const timeLeft = deadline - performance.now();
        const share = Math.min(this.rules.memberWait(timeLeft, this.members.length), timeLeft);
        const wait = taken.length > 0 ? Math.min(share, holdingWait()) : share;
        const memberWait = waitTime <= 0 ? 0 : Math.max(0, Math.floor(wait));
        let acquired = false;
        try {
          acquired = await member.tryLock({ waitTime: memberWait, leaseTime: memberLease, signal });
        } catch (error) {
          if (!this.rules.memberErrorsAreFailures || signal?.aborted) {
            await this.release(taken);
            throw error;
          }
        }
        if (acquired) taken.push(member);
        else failures += 1;
        if (failures > allowedFailures) break;
        if (taken.length >= this.rules.quorum && taken.length + failures === this.members.length) break;
      }
      if (
        taken.length >= this.rules.quorum &&
        this.stillValid(leaseTime, performance.now() - attemptStarted)
      ) {
        if (leaseTime > 0 && memberLease !== leaseTime) await this.shortenLeases(taken, leaseTime);
        return true;
      }
      await this.release(taken);
      if (performance.now() >= deadline || waitTime <= 0) return false;
      // Step back a random moment before trying again, so that two groups that just gave way to
      // each other do not take their first members back at once, over and over.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(holdingWait(), deadline - performance.now())),
      );
    }
  }

  private stillValid(leaseTime: number, elapsed: number): boolean {
    if (!this.rules.validity) return true;
    const lease = leaseTime < 0 ? this.rules.watchdogLease : leaseTime;
    return this.rules.validity(lease, elapsed) > 0;
  }

  private async shortenLeases(taken: RLock[], leaseTime: number): Promise<void> {
    await Promise.all(taken.map((member) => (member as BaseLock).shortenLease(leaseTime)));
  }

  private async release(taken: RLock[]): Promise<void> {
    await Promise.allSettled(taken.map((member) => member.unlock()));
  }

  /** Aborts when fewer members than the quorum are still held (a lease lost, or the caller's signal). */
  private watchHolds(callerSignal?: AbortSignal): { signal: AbortSignal; release: () => void } {
    const controller = new AbortController();
    const watches = this.members.map((member) => (member as BaseLock).watchCurrentHold());
    let lost = 0;
    const onLost = (event: Event): void => {
      lost += 1;
      if (this.members.length - lost < this.rules.quorum) {
        controller.abort((event.target as AbortSignal).reason);
      }
    };
    for (const watch of watches) watch?.signal.addEventListener('abort', onLost, { once: true });
    const signal = callerSignal ? AbortSignal.any([controller.signal, callerSignal]) : controller.signal;
    return {
      signal,
      release: () => {
        for (const watch of watches) {
          watch?.signal.removeEventListener('abort', onLost);
          watch?.dispose();
        }
      },
    };
  }

  /** Asks every member; where members' errors only count as failures, an error answers `failed`. */
  private ask<T>(question: (member: RLock) => Promise<T>, failed: T): Promise<T[]> {
    return Promise.all(
      this.members.map((member) =>
        this.rules.memberErrorsAreFailures ? question(member).catch(() => failed) : question(member),
      ),
    );
  }

  private countTrue(values: boolean[]): boolean {
    return values.filter(Boolean).length >= this.rules.quorum;
  }

  private quorumValue(values: number[]): number {
    return [...values].sort((a, b) => b - a)[this.rules.quorum - 1] as number;
  }
}
