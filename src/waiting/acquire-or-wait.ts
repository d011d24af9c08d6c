import { RedisUnavailableError } from '../errors';
import type { StepLimits } from '../redis/redis-calls';
import { connectionGaveUp, isPassing } from '../redis/redis-calls';
import { pauseFor, retryPause, sharedDelay } from '../util/timing';

/**
 * The one acquire loop every lock kind shares:
 *   attempt -> open a wake source -> attempt again -> sleep(min(holder ttl, time left)) -> attempt ...
 *
 * The wake source is where "try again now" comes from: the lock's release channel for the
 * reentrant lock, the client's own channel for the fair lock (whose releases hand the lock straight
 * to the next waiter). Opened after the first failed attempt, it is followed by a second attempt
 * that catches a release in between. A kind that must be listening before it joins a queue makes
 * its first attempt one that does not queue (a free lock needs no wake source), and joins the
 * queue with the second, once listening. Sleeping never outlasts the holder's ttl, so a holder
 * that dies without releasing costs a waiter no more than its remaining lease.
 *
 * Time budget: a wait settles within waitTime + WAIT_SLACK_MS whatever Redis does. Each call is
 * bounded by what is left of that (and by commandTimeout); a call that fails because Redis is
 * unreachable, slow or busy is tried again after a short pause while time is left, and a wait
 * whose time runs out after such a failure rejects with it (an outage is not "someone holds it").
 * A wait without a bound (lock()) rides out an outage the same way, telling `onRetry` each time.
 * A connection set to fail fast (maxRetriesPerRequest, enableOfflineQueue: false) ends a wait with
 * a bound as soon as it gives up on its commands: ioredis fails the service's own commands then.
 * Time that an event loop standing still took from a wait is not Redis' doing: see stepBudget.
 */

/**
 * 'try': one attempt, never queue; 'look': the first attempt of a wait that listens before it
 * queues, which never queues either (any ttl it answers only says "not taken": the wait goes on
 * with 'first'); 'first': the first attempt of a wait that may queue; 'queued': a later one.
 */
export type AttemptKind = 'try' | 'look' | 'first' | 'queued';

/**
 * What a 'look' answers when only the full attempt can decide (fair/try.lua: waiters are queued on
 * a free lock, and whose turn it is takes the full script): the wait's next attempt is a full one.
 */
export const ASK_IN_FULL = -4;

/**
 * What an attempt answers when it acquired but its answer was read only after the lease it asked
 * for had run out (the process stood still, or Redis kept the answer): the grant was given back,
 * and the lock may well be free. The wait looks once more at once, within the slack from now when
 * its time is gone (as its last look after a stalled sleep); a lock's single attempt makes that one
 * look too (AcquiringLock.onFirstAnswer). A second such answer counts as the lock held.
 */
export const STALE_GRANT = -6;

/** The mode an acquire script takes for an attempt: a 'look' never queues, as a 'try'. */
export function scriptMode(kind: AttemptKind): 'try' | 'first' | 'queued' {
  return kind === 'look' ? 'try' : kind;
}

export type WakeReason = 'message' | 'recheck' | 'timeout' | 'granted';

/** The longest delay setTimeout keeps: a longer (or infinite) one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How long past waitTime a wait may take to settle: the last call's answer, leaving a queue. */
export const WAIT_SLACK_MS = 200;

export interface WakeSource {
  /** Sleeps until a wake-up or `ms` passes; 'granted' means a release handed this waiter the lock. */
  sleep(ms: number, signal?: AbortSignal): Promise<WakeReason>;
  /** Ends the sleep in progress, if any (the wait looks again): true when there was one. */
  interrupt(): boolean;
  release(): void;
}

/** What one call of the loop may take: until `budget` ms, and settled at once by the signal. */
export type { StepLimits } from '../redis/redis-calls';

export interface AcquirePlan {
  /**
   * One attempt, settling within the limits: null when acquired, else the holder's remaining ttl
   * in ms (-1: no expiry), or Infinity when the wake source says when to look again (no sleep on
   * the holder's ttl, nor maxSleep). An attempt that acquires after it settled gives its hold back
   * itself.
   */
  attempt(kind: AttemptKind, limits: StepLimits): Promise<number | null>;
  /** Gives back the grant of the last attempt, when the caller stopped waiting as it came (abort, close). */
  undoGrant(): Promise<unknown>;
  openWakeSource(limits: StepLimits): Promise<WakeSource>;
  /**
   * The wake source must be open before the attempt that joins a queue (a queued waiter must never
   * miss its turn): the first attempt only takes a free lock, the second queues.
   */
  wakeSourceFirst: boolean;
  /** Called when a wait that may have queued ends without the lock (leave the queue). */
  giveUp?(limits: StepLimits): Promise<unknown>;
  /** -1 waits forever, 0 makes one attempt. */
  waitTime: number;
  /** The budget of one call, in ms. */
  commandTimeout: number;
  /** The caller's signal: aborting it answers at once. */
  signal?: AbortSignal;
  /**
   * The client's close. Only read between steps, never listened to while things go well
   * (thousands of waits would each add a listener): sleeping waiters and calls in flight are
   * settled with ClientClosedError by the close itself.
   */
  closing: AbortSignal;
  /** Longest single sleep when no ttl bounds it (holder without expiry, waiting forever). */
  maxSleep: number;
  /** Told when a passing failure (Redis unreachable, slow, busy) is tried again after `retryInMs`. */
  onRetry?(error: unknown, retryInMs: number): void;
  /** Fail at the first error, passing or not (a group's member: the group decides what to do). */
  failFast?: boolean;
  /** Told once, when Redis first answered that someone else holds the lock (the wait goes to sleep). */
  onHeldElsewhere?(): void;
  /**
   * What the wait's first attempt answered, when the caller made it itself (see FirstAttempt):
   * the wait goes on from there, until `deadline` (performance.now() time) instead of waitTime.
   */
  first?: FirstAnswer;
  /**
   * Open the wake source before the first attempt, which may then queue at once: for a lock the
   * client saw contended a moment ago, where an attempt that never queues would only find it held
   * (one round trip and one script fewer per acquisition under contention).
   */
  listenFirst?: boolean;
}

/**
 * A first attempt that did not settle its wait: the holder's ttl, or a failure worth another try;
 * and the performance.now() time at which the wait ends (Infinity: never).
 */
export type FirstAnswer = ({ ttl: number } | { failure: unknown }) & { deadline: number };

/**
 * The first attempt of a wait is made by its caller, before any of the wait machinery exists. Most
 * acquisitions take a free lock with it; a wait (wake source, sleeps, retries) is built only when it
 * answers that someone else holds the lock, or fails in a way worth another try, and then goes on
 * from its answer within the same deadline (AcquirePlan.first). These three functions are that
 * attempt's rules, so that the caller can keep its state in one object of its own instead of a
 * suspended frame and closures per acquisition in flight.
 */
export interface FirstAttempt {
  kind: AttemptKind;
  /** The budget of the attempt's call, in ms. */
  budget: number;
  /** performance.now() time at which the wait ends (Infinity: never). */
  deadline: number;
}

/** The kind and budget of a wait's first attempt, and its deadline; waitTime 0 makes one attempt. */
export function firstAttemptOf(
  waitTime: number,
  commandTimeout: number,
  wakeSourceFirst: boolean,
): FirstAttempt {
  if (waitTime === 0) return { kind: 'try', budget: commandTimeout, deadline: performance.now() };
  const deadline = waitTime < 0 ? Infinity : performance.now() + waitTime;
  return { kind: attemptKind(wakeSourceFirst, 0), budget: stepBudget(commandTimeout, deadline), deadline };
}

/**
 * What the first attempt's answer means: null when it acquired, false when a single attempt
 * (waitTime 0) found the lock held, else where the wait goes on from. A grant that lands as the
 * caller stops waiting (abort, close) is the caller's to give back: it checks its signals after a
 * null answer.
 */
export function afterFirstAnswer(
  ttl: number | null,
  waitTime: number,
  deadline: number,
): FirstAnswer | null | false {
  if (ttl === null) return null;
  return waitTime === 0 ? false : { ttl, deadline };
}

/** Where a wait goes on from after its first attempt failed; throws what the wait would throw. */
export function afterFirstFailure(
  error: unknown,
  waitTime: number,
  deadline: number,
  failFast: boolean | undefined,
): FirstAnswer {
  if (waitTime === 0 || failFast || !isPassing(error) || (waitTime > 0 && connectionGaveUp(error)))
    throw error;
  return { failure: error, deadline };
}

/** How a wait ended: by an attempt of its own, by a hand-off from a release, or not at all. */
export type AcquireOutcome = 'attempt' | 'handoff' | false;

export async function acquireOrWait(plan: AcquirePlan): Promise<AcquireOutcome> {
  const check = (): void => {
    plan.signal?.throwIfAborted();
    plan.closing.throwIfAborted();
  };
  check();
  if (plan.waitTime === 0) {
    const ttl = await plan.attempt('try', { budget: plan.commandTimeout, signal: plan.signal });
    return afterGrant(plan, ttl) === null ? 'attempt' : false;
  }

  const deadline = plan.first
    ? plan.first.deadline
    : plan.waitTime < 0
      ? Infinity
      : performance.now() + plan.waitTime;
  const timeLeft = (): number => deadline - performance.now();
  /** When the wait's last look goes out: its deadline, or later when a stall held it (see woke). */
  let lastLook = deadline;
  const limits = (): StepLimits => ({
    budget: stepBudget(plan.commandTimeout, lastLook),
    signal: plan.signal,
  });
  /**
   * A sleep or pause planned to end at `plannedEnd` is over. One that ended past the deadline
   * because it ended late (the event loop stood still) makes the next call the wait's last look,
   * with the slack from now: the stall took the wait's time, Redis did not. Time Redis' own calls
   * took moves nothing.
   */
  const woke = (plannedEnd: number): void => {
    const now = performance.now();
    if (now > plannedEnd) lastLook = Math.max(lastLook, now);
  };

  let source: WakeSource | undefined;
  let outcome: AcquireOutcome = false;
  /** The first attempt's answer, when the caller made it (see FirstAttempt). */
  let first = plan.first;
  let attempts = first ? 1 : 0;
  let failures = 0;
  /** Whether the wait made its one look after a stale grant (see STALE_GRANT). */
  let lookedAfterStale = false;
  try {
    for (;;) {
      let ttl: number | null | undefined;
      let failure: unknown;
      if (first) {
        if ('failure' in first) failure = first.failure;
        else ttl = first.ttl;
        first = undefined;
      } else {
        try {
          if (!source && (attempts > 0 || plan.listenFirst)) source = await plan.openWakeSource(limits());
          check();
          // Listening from the start, a wait queues (or registers as a waiter) with its first attempt.
          const kind = !plan.listenFirst
            ? attemptKind(plan.wakeSourceFirst, attempts)
            : plan.wakeSourceFirst
              ? attemptKind(false, attempts)
              : 'queued';
          attempts += 1;
          ttl = afterGrant(plan, await plan.attempt(kind, limits()));
        } catch (error) {
          if (plan.failFast || !isPassing(error)) throw error;
          if (deadline < Infinity && connectionGaveUp(error)) throw error;
          failure = error;
        }
      }
      check();
      if (ttl === null) return (outcome = 'attempt');
      if (ttl === STALE_GRANT) {
        if (!lookedAfterStale) {
          lookedAfterStale = true;
          lastLook = Math.max(lastLook, performance.now());
          continue;
        }
        ttl = 0;
      }
      const left = timeLeft();
      if (left <= 0) {
        if (failure !== undefined) throw outOfTime(failure, plan.waitTime);
        // A 'look' that left the decision to the full attempt decided nothing: one full attempt
        // that does not queue answers, as a tryLock() would have.
        if (ttl === ASK_IN_FULL && (await lastFullTry())) return (outcome = 'attempt');
        return false;
      }
      if (failure !== undefined) {
        failures += 1;
        const pause = Math.min(retryPause(failures), left);
        plan.onRetry?.(failure, pause);
        // Only after failures: listening on the close here costs nothing on the usual path.
        const pauseEnds = performance.now() + pause;
        await pauseFor(pause, [plan.signal, plan.closing]);
        woke(pauseEnds);
        continue;
      }
      failures = 0;
      // Not listening yet: the next round opens the source and tries again at once.
      if (!source || ttl === undefined) continue;
      plan.onHeldElsewhere?.();
      // A sleep on the holder's ttl may end a little early (see sharedDelay), one on the deadline not.
      const bound = ttl >= 0 && ttl < left ? sharedDelay(ttl) : left;
      const cap = ttl === Infinity ? MAX_TIMER_MS : plan.maxSleep;
      const sleepMs = Math.max(1, Math.min(bound, cap));
      const sleepEnds = performance.now() + sleepMs;
      const wake = await source.sleep(sleepMs, plan.signal);
      woke(sleepEnds);
      check();
      if (wake === 'granted') return (outcome = 'handoff');
    }
  } finally {
    source?.release();
    if (!outcome && plan.giveUp) {
      // A wait that timed out leaves the queue before tryLock answers, within what is left of the
      // slack (a leave Redis does not answer by then goes on in the background); an aborted one
      // answers at once and leaves in the background.
      const stopped = plan.signal?.aborted || plan.closing.aborted;
      // The last steps took the slack: it leaves in the background too, as an aborted one does.
      const late = timeLeft() + Math.min(plan.commandTimeout, WAIT_SLACK_MS) <= 0;
      const leaving = plan
        .giveUp({ budget: stopped || late ? plan.commandTimeout : limits().budget })
        .catch(() => undefined);
      if (!stopped && !late) await leaving;
    }
  }

  /**
   * A wait whose time ran out on a 'look' that left the decision to the full attempt (see
   * ASK_IN_FULL) makes that attempt once, without queueing, as a tryLock() would: true when it took
   * the lock.
   */
  async function lastFullTry(): Promise<boolean> {
    // The look took the slack: no time is left for another call, and the lock was not free.
    if (timeLeft() + Math.min(plan.commandTimeout, WAIT_SLACK_MS) <= 0) return false;
    try {
      return afterGrant(plan, await plan.attempt('try', limits())) === null;
    } catch (error) {
      throw isPassing(error) ? outOfTime(error, plan.waitTime) : error;
    }
  }

  /** An attempt that acquired just as the caller stopped waiting (abort, close) gives it back. */
  function afterGrant(p: AcquirePlan, ttl: number | null): number | null {
    if (ttl === null && (p.signal?.aborted || p.closing.aborted)) {
      void p.undoGrant().catch(() => undefined);
      check();
    }
    return ttl;
  }
}

/**
 * The budget of one call of a wait whose last look goes out at `lastLook` (its deadline, or the
 * moment a stalled event loop let it go out: see acquireOrWait's woke): what is left until the
 * slack after it, and at most commandTimeout. Calls that Redis kept past the deadline leave the
 * calls after them less, down to 1 ms: the answer comes within waitTime + the slack whatever
 * ioredis' own commandTimeout, or how many calls a wait's last round makes.
 */
function stepBudget(commandTimeout: number, lastLook: number): number {
  return Math.max(1, Math.min(commandTimeout, lastLook - performance.now() + WAIT_SLACK_MS));
}

/** The budget of a single attempt's one look after a stale grant: the slack, within commandTimeout. */
export function staleLookBudget(plan: { commandTimeout: number }): number {
  return Math.min(plan.commandTimeout, WAIT_SLACK_MS);
}

/**
 * The kind of a wait's attempt number `attempts` (from 0). A kind that must listen before it
 * queues first tries without queueing: a free lock is taken without a subscription, and only a
 * wait that must queue opens its wake source, then joins the queue.
 */
function attemptKind(listenBeforeQueueing: boolean, attempts: number): AttemptKind {
  if (!listenBeforeQueueing) return attempts === 0 ? 'first' : 'queued';
  if (attempts === 0) return 'look';
  return attempts === 1 ? 'first' : 'queued';
}

/**
 * The error of a wait whose time ran out on a Redis failure: it names the wait, not only its last
 * call (whose budget was just what was left of the wait).
 */
function outOfTime(failure: unknown, waitTime: number): unknown {
  if (!(failure instanceof RedisUnavailableError)) return failure;
  return new RedisUnavailableError(
    failure.lockName,
    'acquire',
    `Redis was unreachable or too slow for the whole ${waitTime} ms wait (last: ${failure.message})`,
    { cause: failure },
  );
}
