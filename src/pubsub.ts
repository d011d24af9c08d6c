import { ClientClosedError } from './errors';
import type { LinkHandlers, PubSubLink } from './pubsub-links';

/**
 * One subscriber connection per client, shared by every lock of that client.
 *
 * Channels are reference-counted: the first waiter on a lock subscribes its channel, the last one
 * to leave unsubscribes it after a short linger. SUBSCRIBE and UNSUBSCRIBE of one channel go out
 * strictly one after the other, so an UNSUBSCRIBE can never overtake a newer SUBSCRIBE and leave a
 * waiter listening to nothing.
 *
 * A release message wakes one sleeping waiter per process (no thundering herd). When no waiter is
 * asleep at that moment, the wake-up is kept as a permit for the next waiter about to sleep, so a
 * message that arrives while a waiter is between attempts is not lost.
 *
 * Messages published while the connection is down are lost for good, so after every reconnect
 * (or, on a cluster, every move of channels to another node), once the subscriptions are confirmed,
 * every waiter re-checks the lock at once. Which connections carry the channels is the link's
 * business (pubsub-links.ts).
 */

/** How long an unused channel stays subscribed, to spare churn under steady contention. */
const LINGER_MS = 200;

type WakeReason = 'message' | 'timeout';

interface Sleeper {
  wake(reason: WakeReason): void;
  fail(error: unknown): void;
}

interface ChannelState {
  /** Waiters holding a subscription to this channel. */
  refs: number;
  /** Whether the last command queued for this channel was SUBSCRIBE. */
  subscribed: boolean;
  /** Settles when the last queued (un)subscribe settles; the next one waits for it. */
  queue: Promise<unknown>;
  /** Settles when the channel's latest SUBSCRIBE is confirmed. */
  ready: Promise<unknown>;
  sleepers: Sleeper[];
  /** Wake-ups that found nobody asleep, kept for waiters between attempts. */
  permits: number;
  /** Messages name the waiter they are for (fair-lock hand-offs): they go to the hooks, not to sleepers. */
  addressed: boolean;
  linger?: NodeJS.Timeout;
}

/** A waiter's hold on one channel. */
export interface Subscription {
  /** Sleeps until a release message for this channel, a reconnect, or `ms` passes. */
  sleep(ms: number, signal?: AbortSignal): Promise<WakeReason>;
  /** Gives the channel back; the last holder's release unsubscribes it. */
  release(): void;
}

export interface SubscriberHooks {
  /** A message on the client's own channel, or on a channel subscribed as `addressed`. */
  onAddressedMessage(message: string): void;
  /** The connection came back (or channels moved) and every subscription is confirmed again. */
  onResubscribed(): void;
}

export class Subscriber {
  private readonly channels = new Map<string, ChannelState>();
  private readonly link: PubSubLink;
  private readonly started: Promise<unknown>;
  private closed = false;

  /**
   * @param openLink    opens the connections, given where their messages and resubscriptions go
   * @param homeChannel the client's own channel, kept subscribed for the client's lifetime: the
   *                    connection never drops out of subscriber mode between two locks'
   *                    subscriptions, and messages meant for this client alone arrive there.
   *                    None with sharded pub/sub, whose channels are bound to the locks' slots.
   */
  constructor(
    openLink: (handlers: LinkHandlers) => PubSubLink,
    private readonly homeChannel: string | undefined,
    private readonly hooks: SubscriberHooks,
  ) {
    this.link = openLink({
      message: (channel, message) => this.onMessage(channel, message),
      resubscribed: () => this.onResubscribed(),
    });
    this.started = homeChannel === undefined ? Promise.resolve() : this.link.subscribe(homeChannel);
    // A failure here reaches every waiter through `started`; do not crash the process meanwhile.
    this.started.catch(() => undefined);
  }

  /** Resolves once the home channel is subscribed: from then on its messages cannot be missed. */
  async ready(): Promise<void> {
    this.throwIfClosed();
    await this.started;
    this.throwIfClosed();
  }

  /**
   * @param addressed messages on this channel name the waiter they are for (see SubscriberHooks)
   */
  async subscribe(channel: string, { addressed = false } = {}): Promise<Subscription> {
    this.throwIfClosed();
    await this.started;
    this.throwIfClosed();
    const state = this.stateOf(channel);
    state.addressed = addressed;
    state.refs += 1;
    clearTimeout(state.linger);
    if (!state.subscribed) {
      state.subscribed = true;
      state.ready = state.queue = this.queueAfter(state.queue, () => this.link.subscribe(channel));
    }
    try {
      await state.ready;
      this.throwIfClosed();
    } catch (error) {
      this.unref(channel, state);
      throw error;
    }
    let released = false;
    return {
      sleep: (ms, signal) => this.sleep(state, ms, signal),
      release: () => {
        if (released) return;
        released = true;
        this.unref(channel, state);
      },
    };
  }

  /** Rejects every sleeping waiter and closes the connection if this client opened it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const state of this.channels.values()) {
      clearTimeout(state.linger);
      for (const sleeper of state.sleepers.splice(0)) sleeper.fail(new ClientClosedError());
    }
    this.channels.clear();
    await this.link.close();
  }

  private stateOf(channel: string): ChannelState {
    let state = this.channels.get(channel);
    if (!state) {
      const settled = Promise.resolve();
      state = {
        refs: 0,
        subscribed: false,
        queue: settled,
        ready: settled,
        sleepers: [],
        permits: 0,
        addressed: false,
      };
      this.channels.set(channel, state);
    }
    return state;
  }

  private queueAfter(previous: Promise<unknown>, command: () => Promise<unknown>): Promise<unknown> {
    return previous.catch(() => undefined).then(command);
  }

  private unref(channel: string, state: ChannelState): void {
    state.refs -= 1;
    state.permits = Math.min(state.permits, state.refs);
    if (state.refs > 0 || this.closed) return;
    clearTimeout(state.linger);
    state.linger = setTimeout(() => {
      if (state.refs > 0 || !state.subscribed || this.closed) return;
      state.subscribed = false;
      state.queue = this.queueAfter(state.queue, () => this.link.unsubscribe(channel));
      state.queue
        .catch(() => undefined)
        .then(() => {
          if (state.refs === 0 && !state.subscribed && this.channels.get(channel) === state) {
            this.channels.delete(channel);
          }
        });
    }, LINGER_MS);
    state.linger.unref();
  }

  private sleep(state: ChannelState, ms: number, signal?: AbortSignal): Promise<WakeReason> {
    this.throwIfClosed();
    signal?.throwIfAborted();
    if (state.permits > 0) {
      state.permits -= 1;
      return Promise.resolve('message');
    }
    return new Promise<WakeReason>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const index = state.sleepers.indexOf(sleeper);
        if (index >= 0) state.sleepers.splice(index, 1);
      };
      const sleeper: Sleeper = {
        wake: (reason) => {
          finish();
          resolve(reason);
        },
        fail: (error) => {
          finish();
          reject(error);
        },
      };
      const onAbort = (): void => sleeper.fail(signal?.reason);
      const timer = setTimeout(() => sleeper.wake('timeout'), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      state.sleepers.push(sleeper);
    });
  }

  private onMessage(channel: string, message: string): void {
    if (channel === this.homeChannel) return this.hooks.onAddressedMessage(message);
    const state = this.channels.get(channel);
    if (!state) return;
    if (state.addressed) return this.hooks.onAddressedMessage(message);
    // Redisson sends '0' when an exclusive lock is released (one waiter can take it) and other
    // values when several waiters may proceed at once (read locks), so those wake everyone.
    if (message === '0') this.wakeOne(state);
    else this.wakeAll(state);
  }

  private wakeOne(state: ChannelState): void {
    const sleeper = state.sleepers[0];
    if (sleeper) sleeper.wake('message');
    else state.permits = Math.min(state.permits + 1, state.refs);
  }

  private wakeAll(state: ChannelState): void {
    state.permits = state.refs;
    for (const sleeper of [...state.sleepers]) sleeper.wake('message');
  }

  private onResubscribed(): void {
    if (this.closed) return;
    for (const state of this.channels.values()) this.wakeAll(state);
    this.hooks.onResubscribed();
  }

  private throwIfClosed(): void {
    if (this.closed) throw new ClientClosedError();
  }
}
