import { onAbort } from '../abort';
import { LockLostError, LockTimeoutError, RedisUnavailableError } from '../errors';
import type { LockEvents } from '../events';
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
import type { Hold } from '../holds';
import { BaseLock } from './base-lock';
import { quorumAtLeast, quorumDeleted, quorumReleased, quorumSaysYes } from './quorum';
import type { RedisErrorReport } from './context';
import { lockHold } from './lock-hold';
import type { Held, LockHold, LockOptions, RLock, TryLockOptions, WithLockOptions } from './types';

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

/** A member a round took, and the hold it took of it. */
interface Taken {
  member: BaseLock;
  hold: Hold;
}

interface Round {
  taken: Taken[];
  /** A member waited for another holder. */
  contended: boolean;
  /** The last member error, if any. */
  error?: unknown;
  /** How many members failed with an error, or were called off before they answered at all. */
  errors: number;
}

/** The members one acquisition of the group holds, watched for lost leases. */
interface Tracker {
  readonly taken: Taken[];
  /** performance.now() when the group was acquired. */
  readonly acquiredAt: number;
  readonly controller: AbortController;
  dispose(): void;
}

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
  async lock(arg?: number | LockOptions): Promise<void> {
    const { leaseTime, signal } = isOptionsObject(arg)
      ? parseOptions(arg, 'lock')
      : { leaseTime: arg === undefined ? -1 : checkLeaseTime(arg), signal: undefined };
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
    if (waitTime < 0) return this.lockUntilHeld(leaseTime, signal, body, contended);
    return this.acquire(waitTime, leaseTime, signal, body, contended);
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
    if (arg !== undefined && !isOptionsObject(arg)) {
      return this.take(checkWaitTime(arg), leaseTime === undefined ? -1 : checkLeaseTime(leaseTime));
    }
    const options = parseOptions(arg);
    return this.take(options.waitTime ?? 0, options.leaseTime, options.signal);
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
    await quorumReleased(releases, {
      allOrNothing: this.rules.quorum === this.members.length,
      stillHeld: this.rules.quorum - 1,
      groupName: this.name,
      ownerId,
    });
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
      let result: T;
      try {
        result = await runInFrame(body, () => fn({ signal: held.signal }));
      } catch (error) {
        await this.unlock().catch(() => undefined);
        throw error;
      } finally {
        stopListening?.();
        done();
      }
      await this.unlock();
      return result;
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
      const round = await this.round(memberWait, memberLease, signal, body);
      if (round.contended) contended?.();
      const quorumHeld = round.taken.length >= this.rules.quorum;
      if (!signal?.aborted && quorumHeld && this.stillValid(leaseTime, performance.now() - roundStarted)) {
        try {
          if (leaseTime > 0 && memberLease !== leaseTime) await this.shortenLeases(round.taken, leaseTime);
        } catch (error) {
          // Not every member took the lease asked for: held longer than meant, it is given back.
          await this.release(round.taken);
          throw error;
        }
        this.track(round.taken);
        return true;
      }
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
    // Called off when the round is decided, when the caller aborts, or when the group's client closes.
    const memberSignal = AbortSignal.any(
      signal ? [callOff.signal, signal, this.rules.closing] : [callOff.signal, this.rules.closing],
    );
    const round: Round = { taken: [], errors: 0, contended: false };
    let failed = 0;
    /** Members whose wait ended without the lock: another holder kept it. */
    let refused = 0;
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
            round.contended = true;
            answer();
            review();
          },
        });
        if (acquired) round.taken.push({ member, hold: acquired });
        else {
          failed += 1;
          refused += 1;
        }
      } catch (error) {
        failed += 1;
        if (!(error instanceof RoundDecided) && error !== signal?.reason) {
          round.errors += 1;
          round.error = error;
        } else if (error instanceof RoundDecided && !answered && !round.contended && refused === 0) {
          // Called off before Redis said anything: its master may be as unreachable as the others.
          // (Not when another holder decided the round: a slow answer is no outage then.)
          round.errors += 1;
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

  private async shortenLeases(taken: Taken[], leaseTime: number): Promise<void> {
    await Promise.all(taken.map(({ member }) => member.shortenLease(leaseTime)));
  }

  private async release(taken: Taken[]): Promise<void> {
    await Promise.allSettled(taken.map(({ member, hold }) => member.releaseAsMember(hold)));
  }

  /** The controller of the current owner's newest acquisition: it aborts when the group is lost. */
  private newestHeld(): AbortController {
    return this.trackers.get(this.ownerKey())?.at(-1)?.controller ?? new AbortController();
  }

  /** Whose acquisitions of this group the trackers are: the owner the first member acts for. */
  private ownerKey(): string {
    return (this.members[0] as BaseLock).currentOwnerId();
  }

  /**
   * Watches the members this acquisition holds: once fewer than the quorum are, the group's loss
   * is reported (members are held quietly) and withLock's signal aborts. Nothing here refers to
   * the group itself: a group dropped while it holds must be collectable, so that its members'
   * holds are found orphaned.
   */
  private track(taken: Taken[]): void {
    const key = this.ownerKey();
    const tracker = watchQuorum(taken, this.rules, this.name, this.members.length, key, performance.now());
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

/** See GroupLock.track: a function of its own, so that its closures keep no group alive. */
function watchQuorum(
  taken: Taken[],
  rules: Pick<GroupRules, 'quorum' | 'reportLost'>,
  name: string,
  members: number,
  ownerId: string,
  acquiredAt: number,
): Tracker {
  const controller = new AbortController();
  const watches = taken.map(({ member }) => member.watchCurrentHold()).filter((watch) => watch !== undefined);
  let held = watches.length;
  const onLost = (event: Event): void => {
    held -= 1;
    if (held >= rules.quorum || controller.signal.aborted) return;
    const cause = (event.target as AbortSignal).reason as Error;
    // The group itself was dropped: its members report themselves as orphaned.
    if (cause instanceof LockLostError && cause.lostCode === 'orphaned') return controller.abort(cause);
    const reason = `fewer than ${rules.quorum} of its ${members} locks are held: ${cause.message}`;
    controller.abort(new LockLostError(name, ownerId, 'quorum-lost', reason));
    rules.reportLost({ name, ownerId, code: 'quorum-lost', reason });
  };
  for (const watch of watches) watch.signal.addEventListener('abort', onLost, { once: true });
  return {
    taken,
    acquiredAt,
    controller,
    dispose: () => {
      for (const watch of watches) {
        watch.signal.removeEventListener('abort', onLost);
        watch.dispose();
      }
    },
  };
}
