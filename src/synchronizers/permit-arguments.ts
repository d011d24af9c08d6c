import { checkCount, checkKnownKeys, checkOptionsObject, checkSignal, checkWaitTime } from '../util/validate';

/** Redisson counts permits in a Java int. */
export const MAX_PERMITS = 2 ** 31 - 1;

export const checkPermits = (value: unknown, min = 0): number =>
  checkCount('permits', value, 'permits', { min, max: MAX_PERMITS });

/** An options object with waitTime and signal (and `extra` names), checked. */
export function parseWaitOptions(
  value: unknown,
  extra: readonly string[] = [],
): { waitTime?: number; signal?: AbortSignal; given: Record<string, unknown> } {
  const given = checkOptionsObject('options', value);
  checkKnownKeys('options', given, ['waitTime', 'signal', ...extra]);
  return {
    waitTime: given.waitTime === undefined ? undefined : checkWaitTime(given.waitTime),
    signal: checkSignal(given.signal),
    given,
  };
}
