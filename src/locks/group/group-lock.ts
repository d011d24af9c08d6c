import { onAbort } from '../../util/abort';
import { runHeld } from '../../util/run-held';
import {
  closedFor,
  LockLostError,
  LockNotHeldError,
  LockTimeoutError,
  RedisUnavailableError,
} from '../../errors';
import type { LockEvents } from '../../events';
import type { LostLease } from '../../ownership/hold-book';
import { Frame, runInCurrentOrNewTask, runInFrame } from '../../ownership/owner';
import { isPassing } from '../../redis/redis-calls';
import { releasedOrResent } from '../../protocol/resend';
import { pauseFor, retryPause } from '../../util/timing';
import { WAIT_SLACK_MS } from '../../waiting/acquire-or-wait';
import {
  parseLockArguments,
  parseLockOptions as parseOptions,
  parseTryLockArguments,
} from '../../util/validate';
import { BaseLock } from '../base/base-lock';
import { askMembers, holdingWait, type LateMembers, type Round, type Taken } from './group-round';
import { quorumAtLeast, quorumDeleted, quorumReleased, quorumSaysYes } from './quorum';
import { watchQuorum, type Tracker } from './quorum-watch';
import type { RedisErrorReport } from '../../events';
import { lockHold } from '../base/lock-hold';
import type { Held, LockHold, LockOptions, RLock, TryLockOptions, WithLockOptions } from '../types';

/**
 * One lock made of several (Redisson's RedissonMultiLock and RedissonRedLock).
 *
 * An attempt is a round (see askMembers): every member is asked at once, each within the time
 * left, and the round is decided as soon as `quorum` members are held (taken) or can no longer be
 * (failed). A held round answers at once; members that had not answered yet join the hold when
 * they are granted (see LateMembers), so that a RedLock holds every master it can. A failed round
 * calls off the members still being asked, gives back what it took (a grant that reaches a member
 * late too), steps back a random moment and starts over while time is left, so two groups over the
 * same locks never deadlock: a round that holds some members but not a quorum waits for the rest
 * only briefly.
 *
 * Members are held quietly: a member whose lease is lost does not raise its client's lockLost by
 * itself; the group reports a loss once fewer than `quorum` members are still held.
 */
export interface GroupRules {
  /** How many members must be held for the group to be held. */
  quorum: number;
  /**
   * Time the quorum must still have after it was reached (RedLock's validity check): the lease
   * minus the time taking it took minus the clocks' drift. Null: no check.
   */
  validity?(leaseMs: number, elapsedMs: number): number;
  /** The lease the validity check assumes for watchdog locks. */
  watchdogLease: number;
  label: string;
  /** What the client's events call it. */
  kind: 'multi' | 'red';
  /** The client's acquired / notAcquired / released events. */
  events: LockEvents;
  /** The client that made the group: where its lost lease and outages are reported. */
  reportLost(lost: LostLease): void;
  reportRedisError(report: RedisErrorReport): void;
  /** Counts a running withLock body (its frame) for the client's close(); call the result when done. */
  trackBody(body: Frame): () => void;
  /** The client's close: a group made by a closed client takes nothing more. */
  closing: AbortSignal;
}

/**
 * What is left, in whole ms (at least 1), of the slack of a wait ending at `deadline` for a step
 * that began at `startedAt`: counted from the step's start when a stalled loop let it begin late.
 */
function slackLeft(deadline: number, startedAt: number): number {
  return Math.max(1, Math.floor(Math.max(deadline, startedAt) + WAIT_SLACK_MS - performance.now()));
}

/** How long lock() waits for the members in one attempt before it starts over (Redisson's 1.5 s each). */
const LOCK_ROUND_PER_MEMBER_MS = 1_500;

export class GroupLock implements RLock {
  readonly name: string;
  readonly kind: 'multi' | 'red';
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
    this.kind = rules.kind;
  }

  lock(leaseTime?: number): Promise<void>;
  lock(options: LockOptions): Promise<void>;
  async lock(arg?: number | LockOptions, extra?: unknown): Promise<void> {
    const { leaseTime, signal } = parseLockArguments(arg, extra);
    await this.take(-1, leaseTime, signal);
  }

  /**
   * Acquires the group: lockUntilHeld when waiting forever, else acquire. Reported to the client's
   * events as one acquisition (its members are not reported on their own).
   */
  private take(waitTime: number, leaseTime: number, signal?: AbortSignal, body?: Frame): Promise<boolean> {
    const { events } = this.rules;
    if (!events.observes('acquired')) return this.takeOnce(waitTime, leaseTime, signal, body);
    return events
      .acquisition(this, this.ownerKey(), leaseTime, signal, async (contended) =>
        (await this.takeOnce(waitTime, leaseTime, signal, body, contended)) ? {} : false,
      )
      .then((acquired) => acquired !== false);
  }

  private takeOnce(
    waitTime: number,
    leaseTime: number,
    signal?: AbortSignal,
    body?: Frame,
    contended?: () => void,
  ): Promise<boolean> {
    const taking =
      waitTime < 0
        ? this.lockUntilHeld(leaseTime, signal, body, contended)
        : this.acquire(waitTime, leaseTime, signal, body, contended);
    // The client's close ends every wait with one shared error: the caller's names this group.
    return taking.catch((error: unknown) => {
      throw closedFor(error, this.name, 'acquire');
    });
  }

  /** lock(): attempts of up to 1.5 s per member, until one holds; rides out outages. */
  private async lockUntilHeld(
    leaseTime: number,
    signal?: AbortSignal,
    body?: Frame,
    contended?: () => void,
  ): Promise<true> {
    const round = this.members.length * LOCK_ROUND_PER_MEMBER_MS;
    // Waiting forever rides out an outage: an unreachable quorum is tried again, and reported.
    for (let failures = 1; ; failures += 1) {
      try {
        if (await this.acquire(round, leaseTime, signal, body, contended)) return true;
        failures = 0;
      } catch (error) {
        if (!isPassing(error) || signal?.aborted) throw error;
        const retryInMs = retryPause(failures);
        this.rules.reportRedisError({ name: this.name, operation: 'acquire', error, retryInMs });
        await pauseFor(retryInMs, [signal, this.rules.closing]);
      }
    }
  }

  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, leaseTime?: number): Promise<boolean>;
  tryLock(options: TryLockOptions): Promise<boolean>;
  async tryLock(arg?: number | TryLockOptions, leaseTime?: number): Promise<boolean> {
    const { waitTime, leaseTime: lease, signal } = parseTryLockArguments(arg, leaseTime);
    return this.take(waitTime, lease, signal);
  }

  /**
   * Releases every member. A RedLock answers once too few members can still be held for a quorum
   * (one of them released); the others go on, each within its own budget. LockNotHeldError when
   * the current owner held none.
   */
  async unlock(): Promise<void> {
    const tracker = this.untrack();
    // Without a record of this owner's acquisition (taken through another object over the same
    // locks), every member is asked to let go.
    const releases = tracker
      ? tracker.taken.map(({ member, hold }) => member.releaseAsMember(hold))
      : this.members.map((member) => member.unlock());
    const ownerId = this.ownerKey();
    const released = quorumReleased(releases, {
      allOrNothing: this.rules.quorum === this.members.length,
      stillHeld: this.rules.quorum - 1,
      groupName: this.name,
      ownerId,
    });
    // A hold the group has lost (fewer than the quorum held, or its fixed lease over) is not held,
    // whatever members are left over: they are given back, and unlock() says so as a single lock's
    // does, rather than depend on whether a straggler's lease had run out in Redis yet.
    const lost = tracker?.controller.signal.reason;
    if (lost instanceof LockLostError) {
      await released.catch(() => undefined);
      throw new LockNotHeldError(this.name, ownerId, { heldByOthers: [], lost: lost.lostCode });
    }
    await released;
    if (this.rules.events.observes('released')) {
      this.rules.events.released(this, ownerId, tracker?.acquiredAt, !this.trackers.has(ownerId));
    }
  }

  /** Deletes every member; true when one existed. Answers once a quorum of members answered. */
  async forceUnlock(): Promise<boolean> {
    for (const list of this.trackers.values()) for (const tracker of list) tracker.dispose();
    this.trackers.clear();
    return quorumDeleted(
      this.members.map((member) => member.forceUnlock()),
      this.rules.quorum,
    );
  }

  async isLocked(): Promise<boolean> {
    return quorumSaysYes(
      this.members.map((member) => member.isLocked()),
      this.rules.quorum,
    );
  }

  async isHeldByCurrentTask(): Promise<boolean> {
    return quorumSaysYes(
      this.members.map((member) => member.isHeldByCurrentTask()),
      this.rules.quorum,
    );
  }

  /** Holds of the current owner that a quorum of members has (at least). */
  async getHoldCount(): Promise<number> {
    return quorumAtLeast(
      this.members.map((member) => member.getHoldCount()),
      this.rules.quorum,
    );
  }

  /** The ttl a quorum of members has at least, in ms; -2 when not held, -1 when without expiry. */
  async remainTimeToLive(): Promise<number> {
    const ttl = await quorumAtLeast(
      this.members.map((member) => member.remainTimeToLive()),
      this.rules.quorum,
      (value) => (value === -1 ? Infinity : value),
    );
    return ttl < -1 ? -2 : ttl;
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
      if (!(await this.take(waitTime, parsed.leaseTime, parsed.signal, body))) {
        throw new LockTimeoutError(this.name, waitTime);
      }
      const held = this.newestHeld();
      const userSignal = parsed.signal;
      const stopListening = userSignal && onAbort(userSignal, () => held.abort(userSignal.reason));
      const done = this.rules.trackBody(body);
      return runHeld(
        () => runInFrame(body, () => fn({ signal: held.signal })),
        () => {
          stopListening?.();
          done();
        },
        // The body did its work: a release Redis did not answer goes on in the background.
        (afterWork) => (afterWork ? releasedOrResent(this.unlock()) : this.unlock()),
      );
    });
  }

  /** Acquires as lock() does and hands back the hold, released with unlock() (see RLock.hold). */
  async hold(options?: WithLockOptions): Promise<LockHold> {
    const parsed = parseOptions(options);
    const waitTime = parsed.waitTime ?? -1;
    if (!(await this.take(waitTime, parsed.leaseTime, parsed.signal))) {
      throw new LockTimeoutError(this.name, waitTime);
    }
    const held = this.newestHeld();
    return lockHold(held.signal, undefined, async () => {
      // The client is closing: close() gives back every hold it has.
      if (this.rules.closing.aborted) return;
      await this.unlock();
    });
  }

  /** Rounds until one holds the quorum or waitTime passes (0: one round, no waiting). */
  private async acquire(
    waitTime: number,
    leaseTime: number,
    signal?: AbortSignal,
    body?: Frame,
    contended?: () => void,
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
      // A round made as the wait ends (one attempt per member) answers within the wait's slack,
      // as a single lock's last look does: its members' attempts get what is left of it, counted
      // from the round's start when a stalled event loop let it start late.
      const memberBudget = waitTime > 0 && memberWait === 0 ? slackLeft(deadline, roundStarted) : undefined;
      const round = await askMembers(this.members, {
        quorum: this.rules.quorum,
        memberWait,
        memberBudget,
        memberLease,
        signal,
        body,
        closing: this.rules.closing,
      });
      if (round.contended) contended?.();
      const quorumHeld = round.taken.length >= this.rules.quorum;
      if (!signal?.aborted && quorumHeld && this.stillValid(leaseTime, performance.now() - roundStarted)) {
        const cut = leaseTime > 0 && memberLease !== leaseTime;
        const cutAt = performance.now();
        try {
          // Within the wait's slack, as its attempts: a member that does not answer by then makes
          // the round fail, and its give-back is the one release the budget allows after it.
          if (cut) await this.shortenLeases(round.taken, leaseTime, slackLeft(deadline, cutAt));
        } catch (error) {
          // Not every member took the lease asked for: held longer than meant, it is given back.
          round.late.end();
          await this.release(round.taken);
          throw error;
        }
        // The cut took the time it took: a lease that ran out meanwhile (the process stood still)
        // holds nothing the caller can count on, and the round goes as one that failed.
        if (!cut || performance.now() < cutAt + leaseTime) {
          this.track(round.taken, round.late, cut ? cutAt + leaseTime : undefined);
          return true;
        }
      }
      round.late.end();
      await this.release(round.taken);
      signal?.throwIfAborted();
      this.rules.closing.throwIfAborted();
      // Failed members made the quorum impossible: Redis trouble, not someone else's hold.
      const unreachable = round.errors > this.members.length - this.rules.quorum;
      const failure = unreachable ? this.unreachableError(round) : undefined;
      if (failure !== undefined && !isPassing(failure)) throw failure;
      const left = deadline - performance.now();
      if (left <= 0 || waitTime <= 0) {
        if (failure !== undefined) throw failure;
        return false;
      }
      // Step back a random moment before trying again, so that two groups that just gave way to
      // each other do not take their first members back at once, over and over; after Redis
      // failures, back off as a single lock's wait does.
      const pause = unreachable ? retryPause(failedRounds) : holdingWait();
      await pauseFor(Math.min(pause, left), [signal, this.rules.closing]);
    }
  }

  /** Why a round could not reach its quorum: a member's error, or the silence of too many. */
  private unreachableError(round: Round): unknown {
    return (
      round.error ??
      new RedisUnavailableError(
        this.name,
        'acquire',
        `${round.errors} of ${this.members.length} members did not answer in time; ${this.rules.quorum} must be held`,
      )
    );
  }

  private stillValid(leaseTime: number, elapsed: number): boolean {
    if (!this.rules.validity) return true;
    const lease = leaseTime < 0 ? this.rules.watchdogLease : leaseTime;
    return this.rules.validity(lease, elapsed) > 0;
  }

  private async shortenLeases(taken: Taken[], leaseTime: number, budget: number): Promise<void> {
    await Promise.all(taken.map(({ member, hold }) => member.shortenLease(hold, leaseTime, budget)));
  }

  private async release(taken: Taken[]): Promise<void> {
    await Promise.allSettled(taken.map(({ member, hold }) => member.releaseAsMember(hold)));
  }

  /**
   * The controller of the current owner's newest acquisition: it aborts when the group is lost.
   * Whoever asks for it watches that acquisition (see Tracker.watched).
   */
  private newestHeld(): AbortController {
    const tracker = this.trackers.get(this.ownerKey())?.at(-1);
    if (!tracker) return new AbortController();
    tracker.watched = true;
    return tracker.controller;
  }

  /** Whose acquisitions of this group the trackers are: the owner the first member acts for. */
  private ownerKey(): string {
    return (this.members[0] as BaseLock).currentOwnerId();
  }

  /**
   * Watches the members this acquisition holds, and those that join it late (see watchQuorum).
   * `leaseEnd`: when a fixed lease the members took longer at first ends.
   */
  private track(taken: Taken[], late: LateMembers, leaseEnd: number | undefined): void {
    const key = this.ownerKey();
    const tracker = watchQuorum(taken, late, {
      name: this.name,
      quorum: this.rules.quorum,
      members: this.members.length,
      ownerId: key,
      reportLost: this.rules.reportLost,
      leaseEnd,
    });
    const list = this.trackers.get(key) ?? [];
    list.push(tracker);
    this.trackers.set(key, list);
  }

  /** The current owner's newest acquisition of this group, no longer watched. */
  private untrack(): Tracker | undefined {
    const key = this.ownerKey();
    const list = this.trackers.get(key);
    const tracker = list?.pop();
    tracker?.dispose();
    if (list?.length === 0) this.trackers.delete(key);
    return tracker;
  }
}
