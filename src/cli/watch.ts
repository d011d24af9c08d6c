import type { Connection } from './connect';
import { isNoAnswer } from './no-answer';
import { isCluster, keysOf, readState } from './state';
import { WatchOutput } from './watch-output';

/**
 * `rlock watch <name>`: inspect, again whenever a wake-up is published for the name (a release, a
 * hand-off) and at least every `intervalMs`. Text mode redraws the screen; JSON mode prints one
 * line per change. Ends on Ctrl-C (or when `stop` aborts).
 *
 * An operator watches when something is wrong, which is also when Redis restarts, fails over or
 * stalls: once the first view is shown, a failed look is reported and the watch connects again
 * every `intervalMs` until Redis answers, then says so and goes on. The first look is not retried:
 * a wrong URL or a server that never answers ends the command as inspect would.
 */
export interface WatchOptions {
  json: boolean;
  intervalMs: number;
  stop: AbortSignal;
  write: (text: string) => void;
  /** A fresh connection, made as the first one was (after that one failed). */
  reconnect: () => Promise<Connection>;
  /** The command's --timeout, to say what a failed look means. */
  timeoutMs: number;
}

/** A connection and the subscription that wakes the watch early. */
interface View {
  redis: Connection;
  listener?: Listener;
  /** The subscription dropped (its connection closed): made again at the next look. */
  unheard: boolean;
}

interface Outage {
  since: Date;
  reason: string;
}

export async function watch(
  first: Connection,
  name: string,
  keyPrefix: string,
  options: WatchOptions,
): Promise<void> {
  const { stop } = options;
  const output = new WatchOutput(options.json, options.intervalMs, options.write);
  const waker = new Waker(stop);
  let view: View | undefined = { redis: first, unheard: true };
  let outage: Outage | undefined;
  try {
    while (!stop.aborted) {
      try {
        // Not raced with `stop`: connecting ends within the timeout, and what it makes is closed.
        view ??= { redis: await options.reconnect(), unheard: true };
        if (stop.aborted) break;
        if (view.unheard) await listenAgain(view, name, keyPrefix, waker.wake);
        const state = await untilStopped(readState(view.redis, name, keyPrefix), stop);
        if (view.listener) state.listeners = withoutOwnSubscription(state.listeners);
        if (outage) output.back(outage.since, outage.reason);
        outage = undefined;
        output.look(state);
      } catch (error) {
        if (stop.aborted) break;
        if (!output.started) throw error;
        close(view);
        view = undefined;
        if (!outage) {
          const reason = isNoAnswer(error)
            ? `no answer within ${options.timeoutMs / 1000} s`
            : oneLine(error);
          outage = { since: new Date(), reason };
          output.unreachable(outage.since, reason);
        }
      }
      await waker.sleep(options.intervalMs);
    }
  } finally {
    waker.close();
    close(view);
  }
}

/**
 * The pause between looks: it ends when the interval passes, a wake-up message comes (also one
 * that came while the last look was being read), or the watch is stopped. One listener on the
 * stop signal for the whole watch: one per look would pile up (Node warns from the eleventh).
 */
class Waker {
  private pending = false;
  private resolve?: () => void;

  constructor(private readonly stop: AbortSignal) {
    stop.addEventListener('abort', this.wake, { once: true });
  }

  readonly wake = (): void => {
    this.pending = true;
    this.resolve?.();
  };

  sleep(intervalMs: number): Promise<void> {
    if (this.pending || this.stop.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.pending = false;
        this.resolve = undefined;
        resolve();
      };
      const timer = setTimeout(done, intervalMs);
      this.resolve = done;
    });
  }

  close(): void {
    this.stop.removeEventListener('abort', this.wake);
  }
}

/** `work`, or a rejection as soon as the watch is stopped (a paused server would hold Ctrl-C up). */
function untilStopped<T>(work: Promise<T>, stop: AbortSignal): Promise<T> {
  if (stop.aborted) return Promise.reject(new Error('stopped'));
  return new Promise<T>((resolve, reject) => {
    const onStop = (): void => reject(new Error('stopped'));
    stop.addEventListener('abort', onStop, { once: true });
    // Removed as the work settles, before anything reads the answer.
    const settle = (): void => stop.removeEventListener('abort', onStop);
    work.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}

function close(view: View | undefined): void {
  view?.listener?.disconnect();
  view?.redis.disconnect();
}

/** (Re)subscribes the view; a later close of that subscription's connection marks it unheard. */
async function listenAgain(
  view: View,
  name: string,
  keyPrefix: string,
  onMessage: () => void,
): Promise<void> {
  view.listener?.disconnect();
  view.unheard = false;
  const listener: Listener | undefined = await listen(view.redis, name, keyPrefix, onMessage, () => {
    // Only the current subscription counts: an old one closes because it was replaced.
    if (view.listener === listener) view.unheard = true;
  });
  view.listener = listener;
}

/** Why a look failed, in a few words. */
function oneLine(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
  // ioredis' words for a connection that dropped (a restart, a failover, a network fault).
  return /^Connection is closed/.test(text) ? 'the connection closed' : text.replace(/\.$/, '');
}

/** The watch subscribes to every wake-up channel of the name itself: it is not a waiting client. */
function withoutOwnSubscription(listeners: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(listeners)
      .map(([channel, count]): [string, number] => [channel, count - 1])
      .filter(([, count]) => count > 0),
  );
}

interface Listener {
  disconnect(): void;
}

/**
 * Subscribes to the name's wake-up channels on a second connection (classic pub/sub; a cluster's
 * sharded messages are caught by the interval instead). Undefined when it cannot; `onClose` is
 * told when the subscription's connection closes.
 */
async function listen(
  redis: Connection,
  name: string,
  keyPrefix: string,
  onMessage: () => void,
  onClose: () => void,
): Promise<Listener | undefined> {
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
    subscriber.once('close', onClose);
    return subscriber;
  } catch {
    subscriber.disconnect();
    return undefined;
  }
}
