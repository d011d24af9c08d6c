import { releasedOrResent } from '../../protocol/resend';
import type { LockHold } from '../types';

/**
 * The symbol `await using` calls, read when a hold is made (so that a polyfill installed after
 * rlock was loaded counts). Node ≥ 20.4 has Symbol.asyncDispose; where it is missing (older
 * runtimes, some sandboxes), the hold is keyed by Symbol.for('Symbol.asyncDispose'), the name a
 * polyfill usually gives it.
 */
function asyncDisposeSymbol(): typeof Symbol.asyncDispose {
  return Symbol.asyncDispose ?? (Symbol.for('Symbol.asyncDispose') as typeof Symbol.asyncDispose);
}

/**
 * A LockHold whose release runs `release` once, however often it is called or disposed. release()
 * is the caller's own call and answers as unlock() does; leaving an `await using` block ends a body
 * that did its work, as the end of withLock does: a release Redis did not answer goes on in the
 * background (see releasedOrResent) instead of failing the block.
 */
export function lockHold(
  signal: AbortSignal,
  token: number | undefined,
  release: () => Promise<void>,
): LockHold {
  let released: Promise<void> | undefined;
  const once = (): Promise<void> => (released ??= release());
  const dispose = (): Promise<void> => releasedOrResent(once());
  const hold: LockHold = { signal, release: once, [asyncDisposeSymbol()]: dispose };
  if (token !== undefined) hold.token = token;
  return hold;
}
