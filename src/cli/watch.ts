import type { Connection } from './connect';
import { describeState } from './inspect';
import { isCluster, keysOf, readState } from './state';

/**
 * `rlock watch <name>`: inspect, again whenever a wake-up is published for the name (a release, a
 * hand-off) and at least every `intervalMs`. Text mode redraws the screen; JSON mode prints one
 * line per change. Ends on Ctrl-C (or when `stop` aborts).
 */
export async function watch(
  redis: Connection,
  name: string,
  keyPrefix: string,
  options: { json: boolean; intervalMs: number; stop: AbortSignal; write: (text: string) => void },
): Promise<void> {
  const { stop, write } = options;
  let wake: (() => void) | undefined;
  const listener = await listen(redis, name, keyPrefix, () => wake?.());
  let last = '';
  try {
    while (!stop.aborted) {
      const state = await readState(redis, name, keyPrefix);
      if (listener) state.listeners = withoutOwnSubscription(state.listeners);
      const seen = JSON.stringify({ ...state, queue: state.queue.map((w) => w.ownerId), ttlMs: undefined });
      if (options.json) {
        if (seen !== last) write(`${JSON.stringify({ at: new Date().toISOString(), ...state })}\n`);
      } else {
        const screen = process.stdout.isTTY ? '\x1b[2J\x1b[H' : '';
        write(`${screen}${describeState(state)}\n\n(${new Date().toLocaleTimeString()}; Ctrl-C ends)\n`);
      }
      last = seen;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.intervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        stop.addEventListener('abort', wake, { once: true });
      });
    }
  } finally {
    listener?.disconnect();
  }
}

/** The watch subscribes to every wake-up channel of the name itself: it is not a waiting client. */
function withoutOwnSubscription(listeners: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(listeners)
      .map(([channel, count]): [string, number] => [channel, count - 1])
      .filter(([, count]) => count > 0),
  );
}

/**
 * Subscribes to the name's wake-up channels on a second connection (classic pub/sub; a cluster's
 * sharded messages are caught by the interval instead). Undefined when it cannot.
 */
async function listen(
  redis: Connection,
  name: string,
  keyPrefix: string,
  onMessage: () => void,
): Promise<{ disconnect(): void } | undefined> {
  if (isCluster(redis)) return undefined;
  const subscriber = redis.duplicate();
  subscriber.on('error', () => undefined);
  try {
    const channels = Object.values(keysOf(name, keyPrefix, false).channels).map(
      (channel) => keyPrefix + channel,
    );
    // The command's connections are lazy and queue nothing while they connect.
    await subscriber.connect();
    await subscriber.subscribe(...channels);
    subscriber.on('message', onMessage);
    return subscriber;
  } catch {
    subscriber.disconnect();
    return undefined;
  }
}
