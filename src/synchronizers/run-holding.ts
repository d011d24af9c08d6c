import { ClientClosedError, LockTimeoutError } from '../errors';
import { runHeld } from '../util/run-held';
import type { LockContext } from '../context';
import { Frame } from '../ownership/owner';
import { onAbort } from '../util/abort';
import { releasedOrResent } from '../protocol/resend';
import { parseWaitOptions } from './permit-arguments';
import type { PermitsHeld, PermitWaitOptions } from './types';

/**
 * Runs fn between an acquisition and its release, whatever fn does: the release runs when fn
 * throws too (fn's error wins over a failed release). After fn did its work, a release that went
 * unanswered goes on in the background and fn's result stands (see releasedOrResent). The held signal aborts with the caller's
 * signal and when the client closes; close() gives running bodies its timeout to finish.
 */
export async function runHolding<T, G>(
  context: LockContext,
  name: string,
  options: PermitWaitOptions | undefined,
  take: (waitTime: number, signal?: AbortSignal) => Promise<G | false>,
  give: (grant: G) => Promise<unknown>,
  fn: (held: PermitsHeld) => Promise<T> | T,
): Promise<T> {
  if (typeof fn !== 'function') {
    throw Object.assign(new TypeError('fn must be a function'), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  const { waitTime = -1, signal } = parseWaitOptions(options);
  const grant = await take(waitTime, signal);
  if (grant === false) throw new LockTimeoutError(name, waitTime);
  const held = new AbortController();
  const stops = [signal, context.closing].map(
    (source) => source && onAbort(source, () => held.abort(source.reason)),
  );
  if (signal?.aborted) held.abort(signal.reason);
  // Given back once: by the body's end, or by close() when the body outlasts its timeout.
  let givenBack: Promise<unknown> | undefined;
  let givenBackAtClose = false;
  const giveBack = (): Promise<unknown> => (givenBack ??= give(grant));
  const done = context.trackBody(new Frame(), () => {
    givenBackAtClose = givenBack === undefined;
    return giveBack();
  });
  return runHeld(
    () => fn({ signal: held.signal }),
    () => {
      for (const stop of stops) stop?.();
      done();
    },
    (afterWork) => {
      if (!afterWork) return giveBack();
      if (givenBackAtClose) {
        throw new ClientClosedError(
          `the LockClient was closed while this withPermits body ran: close() gave back the permits of "${name}" ` +
            'before the body was done (its signal had aborted)',
          { lockName: name, operation: 'release' },
        );
      }
      // The body did its work: a release Redis did not answer goes on in the background.
      return releasedOrResent(giveBack());
    },
  );
}
