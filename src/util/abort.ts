/**
 * Listening to a caller's AbortSignal without adding a listener per wait. An application often
 * passes one signal (a shutdown signal, a request's) to many waits at once; one listener each
 * would make Node warn about a leak from the eleventh on, and cost O(n) to remove. Here each
 * signal gets one listener, which calls whoever listens now.
 */
const listeners = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `onAbort` once when `signal` aborts; the returned function stops listening. */
export function onAbort(signal: AbortSignal, onAbort: () => void): () => void {
  let set = listeners.get(signal);
  if (!set) {
    const created = new Set<() => void>();
    set = created;
    listeners.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        listeners.delete(signal);
        for (const listener of created) listener();
      },
      { once: true },
    );
  }
  const own = set;
  own.add(onAbort);
  return () => {
    own.delete(onAbort);
  };
}
