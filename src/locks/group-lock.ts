import { LockLostError, LockNotHeldError, LockTimeoutError } from '../errors';
import type { LostLease } from '../holds';
import { Frame, runInCurrentOrNewTask, runInFrame } from '../owner';
import { isPassing } from '../redis-call';
import { pauseFor, retryPause } from '../timing';
import {
  checkLeaseTime,
  checkWaitTime,
  isOptionsObject,
  parseLockOptions as parseOptions,
} from '../validate';
import { BaseLock } from './base-lock';
import type { RedisErrorReport } from './context';
import type { Held, LockOptions, RLock, TryLockOptions, WithLockOptions } from './types';

/**
 * One lock made of several (Redisson's RedissonMultiLock and RedissonRedLock).
 *
 * An attempt is a round: every member is asked at once, each within the time left, and the round
 * is decided as soon as `quorum` members are held (taken) or can no longer be (failed); members
 * still being asked are then called off, and a grant that reaches one of them late is given back.
 * A failed round gives back what it took, steps back a random moment and starts over while time
 * is left, so two groups over the same locks never deadlock: a round that holds some members but
 * not a quorum waits for the rest only briefly.
 *
 * Members are held quietly: a member whose lease is lost does not raise its client's lockLost by
 * itself; the group reports a loss once fewer than `quorum` members are still held.
 */
export interface GroupRules {
  /** How many members must be held for the group to be held. */
  quorum: number;
  /**
   * Whether queries count a member that fails with an error (its server is down, slow, refusing)
   * as a "no" (RedLock), instead of failing (MultiLock). Acquiring always counts it as not taken:
   * the quorum decides.
   */
  memberErrorsAreFailures: boolean;
  /**
   * Time the quorum must still have after it was reached (RedLock's validity check): the lease
   * minus the time taking it took minus the clocks' drift. Null: no check.
   */
  validity?(leaseMs: number, elapsedMs: number): number;
  /** The lease the validity check assumes for watchdog locks. */
  watchdogLease: number;
  label: string;
  /** The client that made the group: where its lost lease and outages are reported. */
  reportLost(lost: LostLease): void;
  reportRedisError(report: RedisErrorReport): void;
  /** Counts a running withLock body for the client's close(); call the result when done. */
  trackBody(): () => void;
}

/** How long lock() waits for the members in one attempt before it starts over (Redisson's 1.5 s each). */
const LOCK_ROUND_PER_MEMBER_MS = 1_500;

/**
 * While a round already holds members, it waits for the rest only briefly (50-150 ms, at random):
 * two groups taking the same locks in opposite orders each hold what the other waits for, and must
 * not both wait out their whole time. Waiting for the first member costs nothing.
 */
const holdingWait = (): number => 50 + Math.random() * 100;

/** Calls off the members still being asked once a round is decided. */
class RoundDecided extends Error {}

interface Round {
  taken: BaseLock[];
  /** The last member error, if any. */
  error?: unknown;
  /** How many members failed with an error. */
  errors: number;
}

/** The members one acquisition of the group holds, watched for lost leases. */
interface Tracker {
  readonly controller: AbortController;
  dispose(): void;
}

export class GroupLock implements RLock {
  readonly name: string;
  private readonly members: BaseLock[];
  /** Per owner, the trackers of its acquisitions of this group, newest last. */
  private readonly trackers = new Map<string, Tracker[]>();

  constructor(
    members: RLock[],
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
    this.members = members as BaseLock[];
    this.name = `${rules.label}(${members.map((member) => member.name).join(', ')})`;
  }

  lock(leaseTime?: number): Promise<void>;
  lock(options: LockOptions): Promise<void>;
  async lock(arg?: number | LockOptions): Promise<void> {
    const { leaseTime, signal } = isOptionsObject(arg)
      ? parseOptions(arg, 'lock')
      : { leaseTime: arg === undefined ? -1 : checkLeaseTime(arg), signal: undefined };
    await this.lockUntilHeld(leaseTime, signal);
  }

  /** lock(): attempts of up to 1.5 s per member, until one holds; rides out outages. */
  private async lockUntilHeld(leaseTime: number, signal?: AbortSignal, body?: Frame): Promise<void> {
    const round = this.members.length * LOCK_ROUND_PER_MEMBER_MS;
    // Waiting forever rides out an outage: an unreachable quorum is tried again, and reported.
    for (let failures = 1; ; failures += 1) {
      try {
        if (await this.acquire(round, leaseTime, signal, body)) return;
        failures = 0;
      } catch (error) {
        if (!isPassing(error) || signal?.aborted) throw error;
        const retryInMs = retryPause(failures);
        this.rules.reportRedisError({ name: this.name, operation: 'acquire', error, retryInMs });
        await pauseFor(retryInMs, [signal]);
      }
    }
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

  /**
   * Releases every member; answers once a quorum of members answered (the others go on, each
   * within its own budget). LockNotHeldError only when fewer than the quorum were held.
   */
  async unlock(): Promise<void> {
    this.untrack();
    const results = await this.untilQuorum(this.members.map((member) => member.unlock()));
    const released = results.filter((result) => result?.status === 'fulfilled').length;
    const failure = results.find(
      (result): result is PromiseRejectedResult =>
        result?.status === 'rejected' && !(result.reason instanceof LockNotHeldError),
    );
    if (failure && this.rules.quorum === this.members.length) throw failure.reason;
    if (released < this.rules.quorum) {
      if (failure) throw failure.reason;
      throw new LockNotHeldError(this.name, 'the current owner');
    }
  }

  /** Deletes every member; true when one existed. Answers once a quorum of members answered. */
  async forceUnlock(): Promise<boolean> {
    for (const list of this.trackers.values()) for (const tracker of list) tracker.dispose();
    this.trackers.clear();
    const results = await this.untilQuorum(this.members.map((member) => member.forceUnlock()));
    const answered = results.filter((result) => result?.status === 'fulfilled');
    if (answered.length === 0) {
      const failure = results.find(
        (result): result is PromiseRejectedResult => result?.status === 'rejected',
      );
      if (failure) throw failure.reason;
    }
    return answered.some((result) => (result as PromiseFulfilledResult<boolean>).value);
  }

  async isLocked(): Promise<boolean> {
    return this.quorumHolds((member) => member.isLocked());
  }

  async isHeldByCurrentTask(): Promise<boolean> {
    return this.quorumHolds((member) => member.isHeldByCurrentTask());
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
      // The body runs in a frame of its own: a sibling branch of the task waits for it (see OwnerGates).
      const body = new Frame((this.members[0] as BaseLock).currentFrame());
      if (waitTime < 0) await this.lockUntilHeld(parsed.leaseTime, parsed.signal, body);
      else if (!(await this.acquire(waitTime, parsed.leaseTime, parsed.signal, body))) {
        throw new LockTimeoutError(this.name, waitTime);
      }
      const lost =
        this.trackers.get(this.ownerKey())?.at(-1)?.controller.signal ?? new AbortController().signal;
      const signal = parsed.signal ? AbortSignal.any([lost, parsed.signal]) : lost;
      const done = this.rules.trackBody();
      let result: T;
      try {
        result = await runInFrame(body, () => fn({ signal }));
      } catch (error) {
        await this.unlock().catch(() => undefined);
        throw error;
      } finally {
        done();
      }
      await this.unlock();
      return result;
    });
  }

  /** Rounds until one holds the quorum or waitTime passes (0: one round, no waiting). */
  private async acquire(
    waitTime: number,
    leaseTime: number,
    signal?: AbortSignal,
    body?: Frame,
  ): Promise<boolean> {
    const started = performance.now();
    const deadline = waitTime < 0 ? Infinity : started + waitTime;
    // A member waited for must not run out before the others are taken: with a fixed lease and a
    // wait, members take a longer lease first and are cut to the asked lease at the end.
    const memberLease = leaseTime < 0 ? -1 : waitTime > 0 ? Math.max(leaseTime, 2 * waitTime) : leaseTime;
    for (let failedRounds = 1; ; failedRounds += 1) {
      signal?.throwIfAborted();
      const roundStarted = performance.now();
      const memberWait = waitTime <= 0 ? 0 : Math.max(0, Math.floor(deadline - roundStarted));
      const round = await this.round(memberWait, memberLease, signal, body);
      const quorumHeld = round.taken.length >= this.rules.quorum;
      if (!signal?.aborted && quorumHeld && this.stillValid(leaseTime, performance.now() - roundStarted)) {
        if (leaseTime > 0 && memberLease !== leaseTime) await this.shortenLeases(round.taken, leaseTime);
        this.track(round.taken);
        return true;
      }
      await this.release(round.taken);
      signal?.throwIfAborted();
      // Failed members made the quorum impossible: Redis trouble, not someone else's hold.
      const unreachable = round.errors > this.members.length - this.rules.quorum;
      if (unreachable && !isPassing(round.error)) throw round.error;
      const left = deadline - performance.now();
      if (left <= 0 || waitTime <= 0) {
        if (unreachable) throw round.error;
        return false;
      }
      // Step back a random moment before trying again, so that two groups that just gave way to
      // each other do not take their first members back at once, over and over; after Redis
      // failures, back off as a single lock's wait does.
      const pause = unreachable ? retryPause(failedRounds) : holdingWait();
      await pauseFor(Math.min(pause, left), [signal]);
    }
  }

  /**
   * Asks every member at once; settles when each answered or was called off. The round is decided
   * as soon as the quorum is held or out of reach. A round that holds members but waits for others
   * that another holder keeps waits only `holdingWait()` more (two groups must not hold each
   * other's members for their whole wait); a member that has not answered at all is waited for
   * within its own budget, and then counts as failed.
   */
  private round(memberWait: number, memberLease: number, signal?: AbortSignal, body?: Frame): Promise<Round> {
    const allowedFailures = this.members.length - this.rules.quorum;
    const callOff = new AbortController();
    const memberSignal = signal ? AbortSignal.any([callOff.signal, signal]) : callOff.signal;
    const round: Round = { taken: [], errors: 0 };
    let failed = 0;
    let unanswered = this.members.length;
    let holding: NodeJS.Timeout | undefined;
    const decide = (): void => {
      clearTimeout(holding);
      if (!callOff.signal.aborted) callOff.abort(new RoundDecided());
    };
    const review = (): void => {
      if (round.taken.length >= this.rules.quorum || failed > allowedFailures) decide();
      else if (round.taken.length > 0 && unanswered === 0 && memberWait > 0 && !holding) {
        holding = setTimeout(decide, holdingWait());
      }
    };
    const asked = this.members.map(async (member) => {
      let answered = false;
      const answer = (): void => {
        if (answered) return;
        answered = true;
        unanswered -= 1;
      };
      try {
        const acquired = await member.tryLockAsMember({
          waitTime: memberWait,
          leaseTime: memberLease,
          signal: memberSignal,
          body,
          onHeldElsewhere: () => {
            answer();
            review();
          },
        });
        if (acquired) round.taken.push(member);
        else failed += 1;
      } catch (error) {
        failed += 1;
        if (!(error instanceof RoundDecided) && error !== signal?.reason) {
          round.errors += 1;
          round.error = error;
        }
      }
      answer();
      review();
    });
    return Promise.all(asked).then(() => {
      clearTimeout(holding);
      return round;
    });
  }

  private stillValid(leaseTime: number, elapsed: number): boolean {
    if (!this.rules.validity) return true;
    const lease = leaseTime < 0 ? this.rules.watchdogLease : leaseTime;
    return this.rules.validity(lease, elapsed) > 0;
  }

  private async shortenLeases(taken: BaseLock[], leaseTime: number): Promise<void> {
    await Promise.all(taken.map((member) => member.shortenLease(leaseTime)));
  }

  private async release(taken: BaseLock[]): Promise<void> {
    await Promise.allSettled(taken.map((member) => member.unlock()));
  }

  /** Whose acquisitions of this group the trackers are: the owner the first member acts for. */
  private ownerKey(): string {
    return (this.members[0] as BaseLock).currentOwnerId();
  }

  /**
   * Watches the members this acquisition holds: once fewer than the quorum are, the group's loss
   * is reported (members are held quietly) and withLock's signal aborts.
   */
  private track(taken: BaseLock[]): void {
    const key = this.ownerKey();
    const controller = new AbortController();
    const watches = taken.map((member) => member.watchCurrentHold()).filter((watch) => watch !== undefined);
    let held = watches.length;
    const onLost = (event: Event): void => {
      held -= 1;
      if (held >= this.rules.quorum || controller.signal.aborted) return;
      const cause = (event.target as AbortSignal).reason as Error;
      const reason = `fewer than ${this.rules.quorum} of its ${this.members.length} locks are held: ${cause.message}`;
      controller.abort(new LockLostError(this.name, key, 'quorum-lost', reason));
      this.rules.reportLost({ name: this.name, ownerId: key, code: 'quorum-lost', reason });
    };
    for (const watch of watches) watch.signal.addEventListener('abort', onLost, { once: true });
    const tracker: Tracker = {
      controller,
      dispose: () => {
        for (const watch of watches) {
          watch.signal.removeEventListener('abort', onLost);
          watch.dispose();
        }
      },
    };
    const list = this.trackers.get(key) ?? [];
    list.push(tracker);
    this.trackers.set(key, list);
  }

  private untrack(): void {
    const key = this.ownerKey();
    const list = this.trackers.get(key);
    list?.pop()?.dispose();
    if (list?.length === 0) this.trackers.delete(key);
  }

  /**
   * Settles with every member's outcome once `quorum` of them succeeded (the rest are left to
   * finish, each within its own budget, and read as undefined), or once all settled.
   */
  private untilQuorum<T>(work: Array<Promise<T>>): Promise<Array<PromiseSettledResult<T> | undefined>> {
    const results: Array<PromiseSettledResult<T> | undefined> = work.map(() => undefined);
    return new Promise((resolve) => {
      let settled = 0;
      let succeeded = 0;
      work.forEach((promise, i) => {
        promise
          .then(
            (value) => {
              results[i] = { status: 'fulfilled', value };
              succeeded += 1;
            },
            (reason: unknown) => {
              results[i] = { status: 'rejected', reason };
            },
          )
          .finally(() => {
            settled += 1;
            if (succeeded >= this.rules.quorum || settled === work.length) resolve([...results]);
          });
      });
    });
  }

  /**
   * Whether a quorum of members says yes; answers as soon as that is decided (enough yeses, or too
   * few left to make one). Where members' errors only count as failures, an error is a no.
   */
  private quorumHolds(question: (member: BaseLock) => Promise<boolean>): Promise<boolean> {
    const { quorum, memberErrorsAreFailures } = this.rules;
    return new Promise((resolve, reject) => {
      let yes = 0;
      let pending = this.members.length;
      for (const member of this.members) {
        question(member).then(
          (answer) => {
            pending -= 1;
            if (answer) yes += 1;
            if (yes >= quorum) resolve(true);
            else if (yes + pending < quorum) resolve(false);
          },
          (error: unknown) => {
            pending -= 1;
            if (!memberErrorsAreFailures) reject(error);
            else if (yes + pending < quorum) resolve(false);
          },
        );
      }
    });
  }

  /** Asks every member; where members' errors only count as failures, an error answers `failed`. */
  private ask<T>(question: (member: BaseLock) => Promise<T>, failed: T): Promise<T[]> {
    return Promise.all(
      this.members.map((member) =>
        this.rules.memberErrorsAreFailures ? question(member).catch(() => failed) : question(member),
      ),
    );
  }

  private quorumValue(values: number[]): number {
    return [...values].sort((a, b) => b - a)[this.rules.quorum - 1] as number;
  }
}
