import type { EventLoopUtilization } from 'node:perf_hooks';
import { onAbort } from './abort';

/** Small timing helpers shared by the wait loop, the pub/sub layer and the group locks. */

/**
 * How much later than due a timer may fire and still mean a busy event loop: later than that, the
 * loop stood still (long synchronous work, a GC pause, a stopped process), and nothing this client
 * should have done meanwhile (read an answer, send a renewal) could happen.
 */
export const STALL_MS = 50;

/** The event loop's own accounting at one moment: see stoodStillSince. */
export interface LoopMark {
  /** performance.now() when it was taken. */
  at: number;
  loop?: EventLoopUtilization;
}

/** Node's count of the time its event loop spent waiting for I/O; absent on runtimes without it. */
const loopUtilization: ((since?: EventLoopUtilization) => EventLoopUtilization) | undefined =
  typeof performance.eventLoopUtilization === 'function'
    ? performance.eventLoopUtilization.bind(performance)
    : undefined;

export function markLoop(): LoopMark {
  return { at: performance.now(), loop: loopUtilization?.() };
}

/**
 * How long the event loop stood still since `mark`, in ms: all of it when the loop hardly waited
 * for I/O meanwhile (less than STALL_MS), so that nothing it was sent could be read; 0 when it did.
 * A loop that ran synchronous work the whole time looks so, and a saturated one too (which still
 * reads its sockets between callbacks): erring that way costs a call a second look, never a
 * wrong answer.
 */
export function stoodStillSince(mark: LoopMark): number {
  if (!loopUtilization || !mark.loop) return 0;
  const { idle } = loopUtilization(mark.loop);
  return idle < STALL_MS ? performance.now() - mark.at : 0;
}

/** Pauses between tries after a passing failure: doubling from the first to the last. */
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 1_000;

/** The pause before the n-th try in a row after a passing failure, with ±20% jitter. */
export function retryPause(n: number): number {
  const base = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.max(0, n - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/**
 * Sleeps `ms`; rejects with a signal's reason as soon as one of `signals` aborts. `cut`, when
 * given, holds a function that ends the pause early (resolving) while it lasts.
 */
export function pauseFor(
  ms: number,
  signals: Array<AbortSignal | undefined>,
  cut?: { end?: () => void },
): Promise<void> {
  const present = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  return new Promise((resolve, reject) => {
    const aborted = present.find((signal) => signal.aborted);
    if (aborted) return reject(aborted.reason);
    const done = (): void => {
      clearTimeout(timer);
      for (const stop of stops) stop();
      if (cut) cut.end = undefined;
    };
    if (cut)
      cut.end = () => {
        done();
        resolve();
      };
    const timer = setTimeout(() => {
      done();
      resolve();
    }, ms);
    const stops = present.map((signal) =>
      onAbort(signal, () => {
        done();
        reject(signal.reason);
      }),
    );
  });
}

/**
 * Resolves true once `work` settles (either way), false when `ms` passes first; rejects when the
 * signal aborts first.
 */
export function settledWithin(work: Promise<unknown>, ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(timer);
      stopListening?.();
      return true;
    };
    // After the I/O of the turn the timer fires in: work that settled while the event loop stood
    // still counts as settled in time.
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (finish()) resolve(false);
        }),
      ms,
    );
    const stopListening =
      signal &&
      onAbort(signal, () => {
        if (finish()) reject(signal.reason);
      });
    const settled = (): void => {
      if (finish()) resolve(true);
    };
    work.then(settled, settled);
  });
}

/** Delays from this long on are rounded down to a multiple of SHARED_DELAY_STEP_MS (see sharedDelay). */
const SHARED_DELAY_FROM_MS = 1_000;
const SHARED_DELAY_STEP_MS = 64;

/**
 * A timer delay taken from a holder's ttl, rounded down when it is long. Node keeps one timer list
 * per distinct delay, and a ttl is a new one almost every time (29,987 ms, then 29,993 ...):
 * making and dropping a list each time showed in the contended path's profile. Rounded down,
 * timers share lists, and a look comes at most 64 ms early, never later than the ttl it saw.
 */
export function sharedDelay(ms: number): number {
  return ms < SHARED_DELAY_FROM_MS ? ms : ms - (ms % SHARED_DELAY_STEP_MS);
}
