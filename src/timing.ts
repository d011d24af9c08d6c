import { onAbort } from './abort';

/** Small timing helpers shared by the wait loop, the pub/sub layer and the group locks. */

/** Pauses between tries after a passing failure: doubling from the first to the last. */
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 1_000;

/** The pause before the n-th try in a row after a passing failure, with ±20% jitter. */
export function retryPause(n: number): number {
  const base = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.max(0, n - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** Sleeps `ms`; rejects with a signal's reason as soon as one of `signals` aborts. */
export function pauseFor(ms: number, signals: Array<AbortSignal | undefined>): Promise<void> {
  const present = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  return new Promise((resolve, reject) => {
    const aborted = present.find((signal) => signal.aborted);
    if (aborted) return reject(aborted.reason);
    const done = (): void => {
      clearTimeout(timer);
      for (const stop of stops) stop();
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
    const timer = setTimeout(() => {
      if (finish()) resolve(false);
    }, ms);
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
