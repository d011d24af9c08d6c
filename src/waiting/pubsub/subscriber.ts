import { AsyncResource } from 'node:async_hooks';
import { onAbort } from '../../util/abort';
import { ClientClosedError, RedisReplyError } from '../../errors';
import { DEBUG, debug } from '../../events';
import { isUnknownCommand, type LinkHandlers, type PubSubLink } from './links';
import { retryPause, settledWithin } from '../../util/timing';
import {
  wakeLockWaiters,
  type ChannelState,
  type Sleeper,
  type SleepHold,
  type SubscribeOptions,
  type SubscriberHooks,
  type Subscription,
  type SubscriptionWake,
} from './subscription';

export type { SubscribeOptions, SubscriberHooks, Subscription, WakePolicy } from './subscription';

/**
 * One subscriber connection per client, shared by every lock of that client.
 *
 * Channels are reference-counted: the first waiter on a lock subscribes its channel, the last one
 * to leave unsubscribes it after a short linger. SUBSCRIBE and UNSUBSCRIBE of one channel go out
 * strictly one after the other, so an UNSUBSCRIBE can never overtake a newer SUBSCRIBE and leave a
 * waiter listening to nothing.
 *
 * A release message wakes one sleeping waiter per process (no thundering herd); a channel's wake
 * policy may say more (a semaphore's message wakes as many as it announces permits, a latch's
 * everyone). When no waiter is asleep at that moment, the wake-up is kept as a permit for the next
 * waiter about to sleep, so a message that arrives while a waiter is between attempts is not lost.
 *
 * Messages published while the connection is down are lost for good, so after every reconnect
 * (or, on a cluster, every move of channels to another node), once the subscriptions are confirmed,
 * every waiter re-checks the lock at once. Which connections carry the channels is the link's
 * business (links.ts).
 *
 * Nothing here keeps a failure: a SUBSCRIBE that failed or went unanswered never blocks a waiter
 * beyond its budget. The waiter gets a subscription that is not listening yet, whose sleeps are
 * cut short so it looks again every UNCONFIRMED_POLL_MS; the channel is subscribed again in the
 * background while anyone needs it, and once it is confirmed every waiter on it re-checks.
 * Except on a server that does not know the command (pub/sub renamed away or disabled): no
 * SUBSCRIBE is tried again, and every wait that needs one fails at once with a RedisReplyError
 * that says so (getSpinLock is the lock for such servers).
 */

/** How long an unused channel stays subscribed, to spare churn under steady contention. */
const LINGER_MS = 200;
/** Longest sleep of a waiter whose channel is not (yet, or no longer) confirmed. */
export const UNCONFIRMED_POLL_MS = 500;
/**
 * How long a waiter waits for its SUBSCRIBE to be confirmed before it goes on without (polling):
 * a healthy server confirms within a round trip, and a wait must not spend its budget here.
 */
const CONFIRM_WAIT_MS = 250;

export class Subscriber {
  private readonly channels = new Map<string, ChannelState>();
  private readonly link: PubSubLink;
  private closed = false;
  /** The server's answer when it has no pub/sub (see isUnknownCommand): every subscription fails. */
  private noPubSub?: unknown;
  private readonly scope = new AsyncResource('rlock.Subscriber');

  /**
   * @param openLink    opens the connections, given where their messages and resubscriptions go
   * @param homeChannel the client's own channel, kept subscribed for the client's lifetime: the
   *                    connection never drops out of subscriber mode between two locks'
   *                    subscriptions, and messages meant for this client alone arrive there.
   *                    None with sharded pub/sub, whose channels are bound to the locks' slots.
   */
  constructor(
    openLink: (handlers: LinkHandlers) => PubSubLink,
    readonly homeChannel: string | undefined,
    private readonly hooks: SubscriberHooks,
    /**
     * The connection's ioredis keyPrefix: scripts publish on channels passed as keys, which ioredis
     * prefixes, while it subscribes channels as given. Channels are subscribed under the prefix.
     */
    private readonly channelPrefix = '',
  ) {
    this.link = openLink({
      message: (channel, message) => this.onMessage(channel, message),
      resubscribed: () => this.onResubscribed(),
      dropped: () => this.onDropped(),
    });
    if (homeChannel !== undefined) {
      const home = this.stateOf(channelPrefix + homeChannel);
      home.refs = 1;
      home.addressed = true;
      this.ensureSubscribed(channelPrefix + homeChannel, home);
    }
  }

  /**
   * Takes a hold on `channel`, waiting a moment (CONFIRM_WAIT_MS, within `budget`) for its SUBSCRIBE
   * to be confirmed. Past that the hold is handed out anyway, not listening yet (see the class
   * comment), and the delay is reported.
   */
  async subscribe(name: string, options: SubscribeOptions): Promise<Subscription> {
    this.throwIfClosed();
    const { lock } = options;
    if (this.noPubSub !== undefined) throw this.pubSubMissing(lock, this.noPubSub);
    const channel = this.channelPrefix + name;
    const state = this.stateOf(channel);
    if (options.addressed) state.addressed = true;
    if (options.wakes) state.wakes = options.wakes;
    if (options.via !== undefined) state.via = this.channels.get(this.channelPrefix + options.via);
    if (options.onMessage) state.onMessage = options.onMessage;
    state.refs += 1;
    clearTimeout(state.linger);
    if (options.via === undefined) this.ensureSubscribed(channel, state);
    try {
      if (!this.listens(state) && options.via === undefined) {
        await settledWithin(state.ready, Math.min(options.budget, CONFIRM_WAIT_MS), options.signal);
      }
      this.throwIfClosed();
      if (state.unknown !== undefined) throw this.pubSubMissing(lock, state.unknown);
    } catch (error) {
      this.unref(channel, state);
      throw error;
    }
    if (!this.listens(state) && options.via === undefined) {
      state.handedOutUnconfirmed = true;
      if (!state.reportedUnconfirmed) {
        state.reportedUnconfirmed = true;
        const error = new Error(
          `SUBSCRIBE ${channel} not confirmed within ${CONFIRM_WAIT_MS} ms (pub/sub connection not ready); ` +
            `waiters look again every ${UNCONFIRMED_POLL_MS} ms until it is`,
        );
        this.hooks.onSubscribeFailed(channel, error, UNCONFIRMED_POLL_MS);
      }
    }
    let released = false;
    const hold: SleepHold = {};
    const listens = (): boolean => this.listens(state);
    return {
      get listening() {
        return listens();
      },
      sleep: (ms, signal) => {
        hold.wokenBy = undefined;
        return this.sleep(state, ms, signal, hold, lock);
      },
      interrupt: () => {
        const { sleeper } = hold;
        if (!sleeper) return false;
        sleeper.wake('message');
        return true;
      },
      passOn: (count) => {
        if (hold.wokenBy === undefined) return;
        const before = hold.wokenBy;
        hold.wokenBy = undefined;
        const waiting = state.sleepers.filter((sleeper) => sleeper.since < before).slice(0, count);
        for (const sleeper of waiting) sleeper.wake('message');
      },
      release: () => {
        if (released) return;
        released = true;
        this.unref(channel, state);
      },
    };
  }

  /**
   * A wake-up for this client's waiters on `name` (a channel subscribed with `via`), come addressed:
   * it wakes one of them, as a release message would. False when none waits here (it is the
   * caller's to pass on).
   */
  deliver(name: string): boolean {
    const state = this.channels.get(this.channelPrefix + name);
    if (!state || state.refs <= 0) return false;
    state.messages += 1;
    this.wakeSome(state, 1);
    return true;
  }

  /** How many of this client's waiters hold a subscription to `name` now. */
  holders(name: string): number {
    return this.channels.get(this.channelPrefix + name)?.refs ?? 0;
  }

  /**
   * The waiters on `name`, a channel held `via` another, must hear its messages in Redis too (the
   * lock's holder is not a client that addresses its wake-ups): it is subscribed, and once that is
   * confirmed its waiters look again (a message before it went unheard).
   */
  alsoInRedis(name: string): void {
    const channel = this.channelPrefix + name;
    const state = this.channels.get(channel);
    if (!state || state.refs <= 0 || state.subscribed) return;
    state.handedOutUnconfirmed = true;
    this.ensureSubscribed(channel, state);
  }

  /** Whether a release on `state`'s channel will be heard now. */
  private listens(state: ChannelState): boolean {
    return state.subscribed || state.via === undefined ? state.confirmed : state.via.confirmed;
  }

  /** Rejects every sleeping waiter and closes the connection if this client opened it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const state of this.channels.values()) {
      clearTimeout(state.linger);
      clearTimeout(state.retry);
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
        confirmed: false,
        generation: 0,
        queue: settled,
        ready: settled,
        handedOutUnconfirmed: false,
        reportedUnconfirmed: false,
        failures: 0,
        sleepers: [],
        permits: 0,
        messages: 0,
        addressed: false,
        wakes: wakeLockWaiters,
      };
      this.channels.set(channel, state);
    }
    return state;
  }

  /** Queues a SUBSCRIBE unless one is queued or done; a failed one is tried again while needed. */
  private ensureSubscribed(channel: string, state: ChannelState): void {
    if (state.subscribed || this.closed) return;
    clearTimeout(state.retry);
    state.retry = undefined;
    state.subscribed = true;
    state.confirmed = false;
    const generation = (state.generation += 1);
    const current = (): boolean => state.generation === generation && state.subscribed && !this.closed;
    if (DEBUG) debug('subscribe %s', channel);
    const attempt = this.queueAfter(state.queue, () => this.link.subscribe(channel));
    state.queue = state.ready = attempt;
    attempt.then(
      () => {
        if (!current()) return;
        state.confirmed = true;
        state.failures = 0;
        state.reportedUnconfirmed = false;
        if (state.handedOutUnconfirmed) {
          state.handedOutUnconfirmed = false;
          this.recheck(state);
        }
      },
      (error: unknown) => {
        if (!current()) return;
        state.subscribed = false;
        if (isUnknownCommand(error)) {
          // Asking again would fail the same way: the waiters are told instead (see subscribe).
          state.unknown = this.noPubSub = error;
          for (const sleeper of state.sleepers.splice(0))
            sleeper.fail(this.pubSubMissing(sleeper.lock, error));
          return;
        }
        state.failures += 1;
        if (state.refs <= 0) return;
        const pause = retryPause(state.failures);
        this.hooks.onSubscribeFailed(channel, error, pause);
        state.retry = setTimeout(() => {
          state.retry = undefined;
          if (state.refs > 0 && this.channels.get(channel) === state) this.ensureSubscribed(channel, state);
        }, pause);
        state.retry.unref();
      },
    );
  }

  /**
   * Chains a (un)subscribe after the previous one of its channel. It runs in the subscriber's own
   * async scope: connections a link opens on demand (a cluster node's) live as long as the client
   * and must not keep the AsyncLocalStorage stores of whichever caller happened to need them.
   */
  private queueAfter(previous: Promise<unknown>, command: () => Promise<unknown>): Promise<unknown> {
    return previous.catch(() => undefined).then(() => this.scope.runInAsyncScope(command));
  }

  private unref(channel: string, state: ChannelState): void {
    state.refs -= 1;
    state.permits = Math.min(state.permits, state.refs);
    if (state.refs > 0 || this.closed) return;
    clearTimeout(state.linger);
    state.linger = setTimeout(() => {
      if (state.refs > 0 || this.closed) return;
      clearTimeout(state.retry);
      state.retry = undefined;
      if (!state.subscribed) return this.forget(channel, state);
      state.subscribed = false;
      state.confirmed = false;
      if (DEBUG) debug('unsubscribe %s', channel);
      const unsubscribed = this.queueAfter(state.queue, () => this.link.unsubscribe(channel));
      state.queue = unsubscribed;
      // Forgotten only when nothing was queued after it: a (un)subscribe queued meanwhile belongs to
      // this state, and a new state's SUBSCRIBE must not go out before this state's last UNSUBSCRIBE.
      unsubscribed
        .catch(() => undefined)
        .then(() => {
          if (state.queue === unsubscribed) this.forget(channel, state);
        });
    }, LINGER_MS);
    state.linger.unref();
  }

  private forget(channel: string, state: ChannelState): void {
    if (state.refs === 0 && !state.subscribed && this.channels.get(channel) === state) {
      this.channels.delete(channel);
    }
  }

  /** Sleeps on `state`'s channel; `hold` learns the sleeper while it sleeps, and what woke it. */
  private sleep(
    state: ChannelState,
    ms: number,
    signal: AbortSignal | undefined,
    hold: SleepHold,
    lock: string,
  ): Promise<SubscriptionWake> {
    this.throwIfClosed();
    signal?.throwIfAborted();
    if (state.permits > 0) {
      state.permits -= 1;
      hold.wokenBy = state.messages;
      return Promise.resolve('message');
    }
    // Not listening: a release would go unheard, so look again soon.
    const delay = this.listens(state) ? ms : Math.min(ms, UNCONFIRMED_POLL_MS);
    return new Promise<SubscriptionWake>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        stopListening?.();
        hold.sleeper = undefined;
        const index = state.sleepers.indexOf(sleeper);
        if (index >= 0) state.sleepers.splice(index, 1);
      };
      const sleeper: Sleeper = {
        lock,
        since: state.messages,
        wake: (reason) => {
          finish();
          if (reason === 'message') hold.wokenBy = state.messages;
          resolve(reason);
        },
        fail: (error) => {
          finish();
          reject(error);
        },
      };
      const timer = setTimeout(() => sleeper.wake('timeout'), delay);
      const stopListening = signal && onAbort(signal, () => sleeper.fail(signal.reason));
      hold.sleeper = sleeper;
      state.sleepers.push(sleeper);
    });
  }

  private onMessage(channel: string, message: string): void {
    const state = this.channels.get(channel);
    if (!state) return;
    if (state.addressed) return this.hooks.onAddressedMessage(message);
    if (state.onMessage) return state.onMessage(message);
    state.messages += 1;
    const count = state.wakes(message);
    if (count === Infinity || Number.isNaN(count)) this.wakeAll(state);
    else this.wakeSome(state, count);
  }

  /** Wakes `count` sleepers; what finds nobody asleep is kept for waiters between attempts. */
  private wakeSome(state: ChannelState, count: number): void {
    const woken = state.sleepers.slice(0, Math.max(0, count));
    for (const sleeper of woken) sleeper.wake('message');
    const left = count - woken.length;
    if (left > 0) state.permits = Math.min(state.permits + left, state.refs);
  }

  private wakeAll(state: ChannelState): void {
    state.permits = state.refs;
    for (const sleeper of [...state.sleepers]) sleeper.wake('message');
  }

  /** Waiters on this channel look again: messages may have been missed. */
  private recheck(state: ChannelState): void {
    if (state.addressed) this.hooks.onResubscribed();
    else this.wakeAll(state);
  }

  private onResubscribed(): void {
    if (this.closed) return;
    for (const state of this.channels.values()) {
      if (state.subscribed) state.confirmed = true;
      if (!state.addressed) this.wakeAll(state);
    }
    this.hooks.onResubscribed();
  }

  /** The connection dropped: nothing is heard until it is back and resubscribed. */
  private onDropped(): void {
    for (const state of this.channels.values()) state.confirmed = false;
  }

  /**
   * The error of a wait for `lock` on a server without pub/sub, made from the server's answer. It
   * names the lock, not the channel (the first to fail is often the client's own).
   */
  private pubSubMissing(lock: string, answer: unknown): RedisReplyError {
    return new RedisReplyError(
      lock,
      'subscribe',
      'ERR',
      `${String((answer as Error).message).trim()}: this server has no pub/sub (SUBSCRIBE renamed away or ` +
        'disabled), and waiters of getLock, getFairLock, getFencedLock, getReadWriteLock and the ' +
        'semaphores and latch sleep on it. Use getSpinLock on such a server',
      { cause: answer },
    );
  }

  private throwIfClosed(): void {
    if (this.closed) throw new ClientClosedError();
  }
}
