import { isPassing, type RedisCalls } from './redis-call';
import { retryPause } from './timing';

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
export async function sendUntilAnswered(
  calls: RedisCalls,
  name: string,
  operation: string,
  lifetimeMs: number,
  send: () => Promise<unknown>,
): Promise<void> {
  const until = performance.now() + lifetimeMs;
  for (let tries = 1; ; tries += 1) {
    try {
      await calls.run(name, operation, send);
      return;
    } catch (error) {
      if (!isPassing(error)) return;
    }
    const pause = retryPause(tries);
    if (performance.now() + pause >= until) return;
    await new Promise((resolve) => setTimeout(resolve, pause).unref());
  }
}

/**
 * One call whose outcome must be learned: if Redis does not answer in time it is sent again in
 * the background (see sendUntilAnswered) while the caller gets the error.
 */
export async function callUntilAnswered<T>(
  calls: RedisCalls,
  name: string,
  operation: string,
  lifetimeMs: number,
  send: () => Promise<T>,
): Promise<T> {
  const resend = (): void => void sendUntilAnswered(calls, name, operation, lifetimeMs, send);
  try {
    return await calls.run(name, operation, send, {
      onOrphaned: (fate) => {
        if (fate.ran === 'unknown') resend();
      },
    });
  } catch (error) {
    // Not answered in time: it may still run, or never; sending it again settles which.
    if (isPassing(error)) resend();
    throw error;
  }
}
