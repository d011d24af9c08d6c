/**
 * Argument checks. Times reach setTimeout and PEXPIRE, and both misbehave outside whole
 * milliseconds in [0, 2^31 - 1]: Node fires NaN, negative or too-large delays after ~1 ms, and
 * PEXPIRE with a negative value deletes the key. So every time is checked before it is used.
 */
export const MAX_TIME_MS = 2 ** 31 - 1;

/** Node's codes for the same mistakes, so callers can branch on `err.code` as usual. */
export function typeError(message: string): TypeError {
  return Object.assign(new TypeError(message), { code: 'ERR_INVALID_ARG_TYPE' });
}

export function rangeError(message: string): RangeError {
  return Object.assign(new RangeError(message), { code: 'ERR_OUT_OF_RANGE' });
}

/** A whole number of `unit` (locks, replicas, permits, ...) from min to max. */
export function checkCount(
  argument: string,
  value: unknown,
  unit: string,
  range: { min: number; max: number },
): number {
  const expected = `${argument} must be a whole number of ${unit} from ${range.min} to ${range.max}`;
  if (typeof value !== 'number') throw typeError(`${expected}; got ${describe(value)}`);
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw rangeError(`${expected}; got ${describe(value)}`);
  }
  return value;
}

/**
 * Refuses option names it does not know: `{ waittime: 100 }` would otherwise be ignored in
 * silence, and the caller would get the default instead of what they meant.
 */
export function checkKnownKeys(argument: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if ((value as Record<string, unknown>)[key] === undefined || known.includes(key)) continue;
    const near = known.find((name) => editDistance(name.toLowerCase(), key.toLowerCase()) <= 2);
    throw typeError(
      `${argument} has no option "${key}"` +
        (near ? ` (did you mean "${near}"?)` : `; the options are ${known.join(', ')}`),
    );
  }
}

export function checkLockName(name: unknown): string {
  if (typeof name !== 'string') {
    throw typeError(`name must be a non-empty string; got ${describe(name)}`);
  }
  if (name.length === 0) {
    throw typeError('name must be a non-empty string; got an empty string');
  }
  return name;
}

interface TimeRule {
  /** Smallest accepted value besides -1. */
  min: number;
  /** Whether -1 ("forever" / "use the watchdog") is accepted. */
  allowMinusOne: boolean;
  /** What -1 means, for the error message. */
  minusOneMeans?: string;
}

export function checkTime(argument: string, value: unknown, rule: TimeRule): number {
  const expected =
    `${argument} must be a whole number of milliseconds from ${rule.min} to ${MAX_TIME_MS}` +
    (rule.allowMinusOne ? ` or -1 (${rule.minusOneMeans})` : '');
  if (typeof value !== 'number') {
    throw typeError(`${expected}; got ${describe(value)}`);
  }
  if (rule.allowMinusOne && value === -1) return -1;
  if (!Number.isInteger(value) || value < rule.min || value > MAX_TIME_MS) {
    throw rangeError(`${expected}; got ${describe(value)}`);
  }
  return value;
}

export const checkLeaseTime = (value: unknown): number =>
  checkTime('leaseTime', value, { min: 1, allowMinusOne: true, minusOneMeans: 'use the watchdog' });

export const checkWaitTime = (value: unknown): number =>
  checkTime('waitTime', value, { min: 0, allowMinusOne: true, minusOneMeans: 'wait forever' });

export function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  if (!(signal instanceof AbortSignal)) {
    throw typeError(`signal must be an AbortSignal; got ${describe(signal)}`);
  }
  return signal;
}

export function checkOptionsObject(argument: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw typeError(`${argument} must be an options object; got ${describe(value)}`);
  }
  // A Date, a Map or a class instance has no options of its own to read: taken for `{}`, it would
  // quietly mean the defaults (lock(new Date()) would wait forever with the watchdog).
  if (!isPlainObject(value)) {
    throw typeError(`${argument} must be a plain options object ({ ... }); got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/** An object literal (or Object.create(null)), from this realm or another (a vm context). */
function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as object | null;
  return prototype === null || Object.getPrototypeOf(prototype) === null;
}

function describe(value: unknown): string {
  if (typeof value === 'string')
    return value.length > 40 ? `a string of ${value.length} chars` : `"${value}"`;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `an object (${constructorName(value)})`;
  if (typeof value === 'function') return 'a function';
  return `a ${typeof value}`;
}

/** What made an object: its class's name, or its tag (Object, Date, Map, ...). */
function constructorName(value: object): string {
  const made = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor;
  return typeof made?.name === 'string' && made.name !== ''
    ? made.name
    : Object.prototype.toString.call(value).slice(8, -1);
}

export function isOptionsObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

const WAIT_OPTIONS = ['waitTime', 'leaseTime', 'signal'] as const;
const LOCK_OPTIONS = ['leaseTime', 'signal'] as const;

/**
 * tryLock's arguments, checked: (), (waitTime, leaseTime?) or (options). A leaseTime beside an
 * options object, or beside no waitTime, would otherwise be dropped in silence, and the lock taken
 * with the watchdog instead of the lease the caller meant.
 */
export function parseTryLockArguments(
  first: unknown,
  leaseTime: unknown,
): { waitTime: number; leaseTime: number; signal?: AbortSignal } {
  if (leaseTime !== undefined && first === undefined) {
    throw typeError(
      'waitTime must be given beside a leaseTime: tryLock(waitTime, leaseTime), with waitTime 0 for ' +
        `one attempt; got tryLock(undefined, ${describe(leaseTime)})`,
    );
  }
  if (first !== undefined && !isOptionsObject(first)) {
    return {
      waitTime: checkWaitTime(first),
      leaseTime: leaseTime === undefined ? -1 : checkLeaseTime(leaseTime),
    };
  }
  if (leaseTime !== undefined) {
    throw typeError(
      'leaseTime belongs inside the options object when tryLock is given one: ' +
        `tryLock({ waitTime, leaseTime }); got a second argument ${describe(leaseTime)}`,
    );
  }
  const options = parseLockOptions(first);
  return { waitTime: options.waitTime ?? 0, leaseTime: options.leaseTime, signal: options.signal };
}

/**
 * lock()'s argument, checked: a leaseTime or an options object, and nothing beside it. A second
 * argument is refused rather than ignored: lock() waits until it gets the lock, and a caller who
 * passed a wait time there meant tryLock.
 */
export function parseLockArguments(
  first: unknown,
  extra: unknown,
): { leaseTime: number; signal?: AbortSignal } {
  if (extra !== undefined) {
    throw typeError(
      'lock() takes one argument, a leaseTime or an options object, and waits until it gets the lock: ' +
        `to wait at most some time, use tryLock({ waitTime, leaseTime }); got a second argument ${describe(extra)}`,
    );
  }
  if (!isOptionsObject(first)) return { leaseTime: first === undefined ? -1 : checkLeaseTime(first) };
  const { leaseTime, signal } = parseLockOptions(first, 'lock');
  return { leaseTime, signal };
}

/**
 * The options object of tryLock() and withLock() (or of lock(), which has no waitTime: it waits
 * forever), checked.
 */
export function parseLockOptions(
  value: unknown,
  kind: 'wait' | 'lock' = 'wait',
): {
  waitTime?: number;
  leaseTime: number;
  signal?: AbortSignal;
} {
  const options = checkOptionsObject('options', value);
  checkKnownKeys('options', options, kind === 'wait' ? WAIT_OPTIONS : LOCK_OPTIONS);
  return {
    waitTime: options.waitTime === undefined ? undefined : checkWaitTime(options.waitTime),
    leaseTime: options.leaseTime === undefined ? -1 : checkLeaseTime(options.leaseTime),
    signal: checkSignal(options.signal),
  };
}

/** Levenshtein distance, for "did you mean" on short option names. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] as number;
}
