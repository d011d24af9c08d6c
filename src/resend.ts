import type { RedisCalls } from './redis-call';

/**
 * Commands whose outcome must be learned: a release, a withdrawal, a count that changes. Each
 * carries a latch in Redis that makes a second run change nothing, so sending it again is safe,
 * and not sending it again could leave a hold or a permit taken for a whole lease.
 */

/**
 * Sends `send` until Redis answers it, in the background: through passing failures (Redis
 * unreachable, slow, busy) it keeps trying until `lifetimeMs` has passed (by then the latch, and
 * what it guards, would have expired anyway).
 */
export function sendUntilAnswered(
  calls: RedisCalls,
  name: string,
  operation: string,
  lifetimeMs: number,
  send: () => Promise<unknown>,
): Promise<void> {
  return calls.resend(name, operation, lifetimeMs, send);
}

/**
 * One call whose outcome must be learned: if Redis does not answer in time it is sent again in
 * the background (see sendUntilAnswered) while the caller gets the error.
 */
export function callUntilAnswered<T>(
  calls: RedisCalls,
  name: string,
  operation: string,
  lifetimeMs: number,
  send: () => Promise<T>,
): Promise<T> {
  return calls.run(name, operation, send, { resendFor: lifetimeMs });
}
