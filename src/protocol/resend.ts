import { isPassing } from '../redis/call-errors';
import { RedisUnavailableError } from '../errors';
import type { RedisConnection } from '../redis/connection';
import { isLate, type RedisCalls, type Resent } from '../redis/redis-calls';
import { settleRequest } from './scripts';
import type { ServerClock } from '../redis/server-clock';
import { retryPause, sharedDelay } from '../util/timing';
import type { StepLimits } from '../redis/redis-calls';

/**
 * Commands whose outcome must be learned: a release, a withdrawal, a count that changes. Each
 * carries a latch in Redis that makes a second run change nothing, so sending it again is safe,
 * and not sending it again could leave a hold or a permit taken for a whole lease.
 *
 * A latch makes copies count once only while it lives, and a copy may run long after it was sent
 * (ioredis re-sends what was in flight after every reconnect; a paused server runs what waited in
 * its socket when it resumes). So a request whose copies could do harm after their latch is gone
 * (the synchronizers' counters, a release of an unmarked hold) has a window in server time: every
 * copy carries its end, a copy that arrives later takes no effect (its script fails LATE), and the
 * latch outlives the window. rlock stops sending copies when the window closes; a change that must
 * land (see changeOnce) is then settled, and sent again as a new request if it did not take effect.
 */
export interface RequestWindow {
  /** Server time (epoch ms) after which no copy of the request takes effect. */
  readonly until: number;
  /** performance.now() at which that is, as this client reckons it: copies stop there. */
  readonly closesAt: number;
  /** performance.now() at which the request's latch is gone too: a withdrawal of it stops there. */
  readonly forgottenAt: number;
  /** How long the window lasts, in ms; the latch outlives it by as long (the scripts' latch_ms). */
  readonly lengthMs: number;
}

/**
 * How long a window lasts: at least `atLeastMs` (the latch life the request had before windows),
 * and long enough for the caller's own call, answered within its budget (commandTimeout), and a
 * withdrawal made when that call's fate is unknown (a budget and a grace later), to run inside it.
 */
export function windowLength(atLeastMs: number, commandTimeout: number): number {
  return Math.max(atLeastMs, 2 * commandTimeout);
}

/**
 * A window of `lengthMs` from now, by the server's clock; its latch lives `lengthMs` past its end
 * (the scripts write it so). Read from the clock at once, or once it was read (the first time).
 */
export function openWindow(
  clock: ServerClock,
  name: string,
  lengthMs: number,
  limits?: StepLimits,
): RequestWindow | Promise<RequestWindow> {
  const now = clock.now(name, limits);
  return typeof now === 'number' ? windowFrom(now, lengthMs) : now.then((at) => windowFrom(at, lengthMs));
}

function windowFrom(serverNow: number, lengthMs: number): RequestWindow {
  const closesAt = performance.now() + lengthMs;
  return { until: serverNow + lengthMs, closesAt, forgottenAt: closesAt + lengthMs, lengthMs };
}

/**
 * A change that must take effect once, and whose caller may have been told that it failed: a
 * release, addPermits, countDown, a lock release of any hold. It goes out as one request after
 * another (see changeOnce), each with a latch and a window, until one has taken effect.
 */
export interface Change<T, Q extends RequestWindow> {
  /** A fresh request whose window lasts `lengthMs`, by Redis' clock (read first, within `limits`, when needed). */
  open(lengthMs: number, limits?: StepLimits): Promise<Q>;
  /** Runs request `request` (a copy of it, when sent again). */
  send(request: Q): Promise<T>;
  /**
   * Settles `request` (lua/request/settle.lua): what it answered when it took effect; 'void' when
   * it had not, and now never will; 'unknown' when its latch is gone.
   */
  settle(request: Q): Promise<{ took: T } | 'void' | 'unknown'>;
}

/**
 * Settles `request` through its latch, as Change.settle says (see lua/request/settle.lua): `took`
 * reads the answer the request's script remembered there.
 */
export async function settleByLatch<T>(
  redis: RedisConnection,
  request: RequestWindow & { latch: string },
  took: (answer: string) => T,
): Promise<{ took: T } | 'void' | 'unknown'> {
  const answer = await settleRequest(redis, [request.latch], [request.until, request.lengthMs]);
  if (answer === null || answer === undefined) return 'unknown';
  return answer === 'w' ? 'void' : { took: took(answer) };
}

/**
 * Makes `change` as one call of its caller, within one commandTimeout (the first reading of Redis'
 * clock included). When Redis does not answer in time, the caller gets RedisUnavailableError and
 * the change goes on in the background (see landInBackground) until it has taken effect once, or
 * it is given up on (reported); `onResent` learns what came of it.
 */
export async function changeOnce<T, Q extends RequestWindow>(
  calls: RedisCalls,
  name: string,
  operation: string,
  change: Change<T, Q>,
  lengthMs: number,
  onResent?: (outcome: Resent<T>) => void,
): Promise<T> {
  const startedAt = performance.now();
  const budget = calls.commandTimeout;
  let request: Q;
  try {
    request = await change.open(lengthMs, { budget });
  } catch (error) {
    if (!isPassing(error)) throw error;
    // Redis' clock could not be read: nothing was sent. The background opens the request later.
    const failure =
      error instanceof RedisUnavailableError
        ? new RedisUnavailableError(
            name,
            operation,
            `Redis did not answer the reading of its clock (TIME) that the ${operation} needs first (${error.message})`,
            { cause: error },
          )
        : error;
    calls.hooks.report?.(name, operation, failure, 0);
    void landInBackground(calls, name, operation, change, lengthMs).then(onResent);
    throw failure;
  }
  return calls.run(name, operation, () => change.send(request), {
    budget: Math.max(1, budget - (performance.now() - startedAt)),
    sendAgain: () => landInBackground(calls, name, operation, change, lengthMs, request),
    onResent,
  });
}

/**
 * How long a change goes on in the background for, at most, without a request: twice its window
 * (as long as the first request's latch would live).
 */
const OPEN_FOR_WINDOWS = 2;

/**
 * Goes on with a change whose request `first` went unanswered (or that has none yet, when Redis'
 * clock could not be read), until it has taken effect once. The request is settled: it took effect
 * (done), or it never will, and a new request goes out, its window twice as long (a copy that
 * reaches Redis after its window takes no effect: a link that slow needs a longer one), and so on.
 * Given up on, and reported, when a request's latch was gone before Redis settled it (nobody can
 * tell then whether it took effect), when no request could be opened for twice the window, or when
 * Redis refused the change for good.
 */
async function landInBackground<T, Q extends RequestWindow>(
  calls: RedisCalls,
  name: string,
  operation: string,
  change: Change<T, Q>,
  lengthMs: number,
  first?: Q,
): Promise<Resent<T>> {
  let request = first;
  let length = lengthMs;
  let openUntil = performance.now() + OPEN_FOR_WINDOWS * length;
  for (;;) {
    if (request) {
      const unanswered = request;
      const settled = await calls.resend(name, operation, unanswered.forgottenAt, () =>
        change.settle(unanswered),
      );
      if (!settled.answered) return settled;
      const fate = settled.value;
      if (fate === 'unknown') {
        const detail =
          `Redis answered again only after the request's latch was gone (${unanswered.lengthMs} ms past its ` +
          'window): it took effect once or not at all, and which is not known';
        return giveUp(calls, name, operation, new RedisUnavailableError(name, operation, detail));
      }
      if (fate !== 'void') return { answered: true, value: fate.took, byCopy: true };
      length *= 2;
      openUntil = performance.now() + OPEN_FOR_WINDOWS * length;
    }
    const opened = await openPatiently(calls, change, length, openUntil);
    if (!('request' in opened)) {
      if (!isPassing(opened.failure)) return giveUp(calls, name, operation, opened.failure);
      const detail = `Redis did not answer for ${OPEN_FOR_WINDOWS * length} ms: it took no effect`;
      return giveUp(calls, name, operation, new RedisUnavailableError(name, operation, detail));
    }
    request = opened.request;
    const sent = request;
    try {
      return {
        answered: true,
        value: await calls.run(name, operation, () => change.send(sent)),
        byCopy: false,
      };
    } catch (error) {
      // Unanswered, or refused as LATE (it reached Redis after its window): settled next round.
      if (!isPassing(error) && !isLate(error)) return giveUp(calls, name, operation, error);
    }
  }
}

/**
 * A fresh request of `change`, tried until `until` (performance.now()) while Redis does not answer.
 * Nobody waits for it: Redis' clock is read with as long a budget as there is (replies may be
 * slower than commandTimeout).
 */
async function openPatiently<T, Q extends RequestWindow>(
  calls: RedisCalls,
  change: Change<T, Q>,
  lengthMs: number,
  until: number,
): Promise<{ request: Q } | { failure: unknown }> {
  for (let tries = 1; ; tries += 1) {
    try {
      const budget = Math.max(calls.commandTimeout, sharedDelay(until - performance.now()));
      return { request: await change.open(lengthMs, { budget }) };
    } catch (error) {
      const pause = retryPause(tries);
      if (!isPassing(error) || performance.now() + pause >= until) return { failure: error };
      await new Promise((resolve) => setTimeout(resolve, pause).unref());
    }
  }
}

/** A change given up on: reported (redisError without retryInMs), and told to the caller's onResent. */
function giveUp<T>(calls: RedisCalls, name: string, operation: string, error: unknown): Resent<T> {
  calls.hooks.report?.(name, operation, error);
  return { answered: false, error };
}

/**
 * Sends `send` until Redis answers it, in the background: through passing failures (Redis
 * unreachable, slow, busy) it keeps trying until `stopAt` (performance.now() time: the window's
 * close, after which a copy would take no effect, or the latch's end), then reports that the
 * outcome is not known.
 */
export function sendUntilAnswered(
  calls: RedisCalls,
  name: string,
  operation: string,
  stopAt: number,
  send: () => Promise<unknown>,
): Promise<void> {
  return calls.resend(name, operation, stopAt, send).then(() => undefined);
}

/**
 * One call whose outcome must be learned: if Redis does not answer in time it is sent again in
 * the background (see sendUntilAnswered) while the caller gets the error.
 */
export function callUntilAnswered<T>(
  calls: RedisCalls,
  name: string,
  operation: string,
  stopAt: number,
  send: () => Promise<T>,
  onResent?: (outcome: Resent<T>) => void,
): Promise<T> {
  return calls.run(name, operation, send, { resendUntil: stopAt, onResent });
}

/**
 * Whether `error` says that a release went unanswered (Redis unreachable, slow or busy), and is
 * being sent again in the background until Redis answers it (see callUntilAnswered).
 */
export function isReleaseUnanswered(error: unknown): boolean {
  return isPassing(error) && (error as { operation?: unknown }).operation === 'release';
}

/**
 * The release at the end of a body that did its work (withLock, withPermits, the end of an `await
 * using` block): settles once Redis answered it, or once it went unanswered and goes on in the
 * background, reported (the client's 'redisError' event, and its outcome after). The body's result
 * stands then: the caller must not run it again. Other failures (the lease was lost, the client
 * closed, too few replicas) still reject: they say the body did not run as it should have.
 */
export async function releasedOrResent(release: Promise<unknown>): Promise<void> {
  try {
    await release;
  } catch (error) {
    if (!isReleaseUnanswered(error)) throw error;
  }
}
