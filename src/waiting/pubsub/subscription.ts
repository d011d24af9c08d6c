/**
 * What a waiter holds of the client's subscriber (Subscription), what it asks for
 * (SubscribeOptions), what the client is told (SubscriberHooks), and the state the subscriber
 * keeps per channel (see subscriber.ts).
 */

/** What ended a subscription's sleep (a wait's own reasons are WakeReason, see acquire-or-wait.ts). */
export type SubscriptionWake = 'message' | 'timeout';

/**
 * How many sleeping waiters of one process a message on a channel wakes (Infinity: all). The
 * default is the locks' rule: Redisson's '0' frees an exclusive lock, one waiter can take it;
 * other messages (read locks) may let several through. A semaphore's message is its new permit
 * count, so it wakes up to that many (Redisson's SemaphorePubSub does the same).
 */
export type WakePolicy = (message: string) => number;

export const wakeLockWaiters: WakePolicy = (message) => (message === '0' ? 1 : Infinity);

export interface Sleeper {
  /** The lock or synchronizer it waits for (see SubscribeOptions.lock). */
  lock: string;
  /** How many messages the channel had delivered when it went to sleep. */
  since: number;
  wake(reason: SubscriptionWake): void;
  fail(error: unknown): void;
}

export interface ChannelState {
  /** Waiters holding a subscription to this channel (the home channel holds one for good). */
  refs: number;
  /** Whether the last command queued for this channel was SUBSCRIBE. */
  subscribed: boolean;
  /** Whether that SUBSCRIBE was answered: from then on no message of the channel is missed. */
  confirmed: boolean;
  /** Numbers each SUBSCRIBE, so that only the latest one's answer counts. */
  generation: number;
  /** Settles when the last queued (un)subscribe settles; the next one waits for it. */
  queue: Promise<unknown>;
  /** Settles when the channel's latest SUBSCRIBE settles. */
  ready: Promise<unknown>;
  /** A waiter went on before the channel was confirmed: every waiter re-checks once it is. */
  handedOutUnconfirmed: boolean;
  /** That was reported (see SubscriberHooks.onSubscribeFailed), once until it is confirmed. */
  reportedUnconfirmed: boolean;
  /** Failed SUBSCRIBEs in a row, for the pause before the next. */
  failures: number;
  /** The server answered that it has no such command: the channel is not subscribed again. */
  unknown?: unknown;
  retry?: NodeJS.Timeout;
  sleepers: Sleeper[];
  /** Wake-ups that found nobody asleep, kept for waiters between attempts. */
  permits: number;
  /** Messages delivered so far: tells who was asleep before a given message (see passOn). */
  messages: number;
  /** Messages name the waiter they are for (fair-lock hand-offs): they go to the hooks, not to sleepers. */
  addressed: boolean;
  /** Where this channel's wake-ups come from while it is not subscribed in Redis (SubscribeOptions.via). */
  via?: ChannelState;
  /** Where its messages go instead of to sleepers (SubscribeOptions.onMessage). */
  onMessage?: (message: string) => void;
  /** How many sleepers a message wakes; a channel belongs to one kind of object, which sets it. */
  wakes: WakePolicy;
  linger?: NodeJS.Timeout;
}

/** One subscription's sleep in progress, and the message that last woke it (see passOn). */
export interface SleepHold {
  sleeper?: Sleeper;
  wokenBy?: number;
}

/** A waiter's hold on one channel. */
export interface Subscription {
  /** Whether the channel is subscribed and confirmed now: a release will be heard. */
  readonly listening: boolean;
  /** Sleeps until a release message for this channel, a reconnect, or `ms` passes. */
  sleep(ms: number, signal?: AbortSignal): Promise<SubscriptionWake>;
  /**
   * This waiter was woken by a message it could not use (a semaphore's permits came back, but
   * fewer than it needs): hand the wake-up on to up to `count` waiters that were already asleep
   * when that message came. Each message's wake-up travels down the line once, so two waiters
   * that both need more never wake each other in turns.
   */
  passOn(count: number): void;
  /** Ends this waiter's sleep in progress, as a message would: true when it was asleep. */
  interrupt(): boolean;
  /** Gives the channel back; the last holder's release unsubscribes it. */
  release(): void;
}

export interface SubscriberHooks {
  /** A message on the client's own channel, or on a channel subscribed as `addressed`. */
  onAddressedMessage(message: string): void;
  /** The connection came back (or channels moved, or a late SUBSCRIBE went through): waiters re-check. */
  onResubscribed(): void;
  /** A SUBSCRIBE failed; it is tried again after `retryInMs` while the channel is needed. */
  onSubscribeFailed(channel: string, error: unknown, retryInMs: number): void;
}

export interface SubscribeOptions {
  /** The lock or synchronizer that waits on the channel: the name its errors carry. */
  lock: string;
  /** Messages on this channel name the waiter they are for (see SubscriberHooks). */
  addressed?: boolean;
  /** How many sleepers a message wakes; default: the locks' rule (see WakePolicy). */
  wakes?: WakePolicy;
  /** How long to wait for the SUBSCRIBE to be confirmed before going on without it, in ms. */
  budget: number;
  signal?: AbortSignal;
  /**
   * The channel is not subscribed in Redis (unless alsoInRedis asks for it): its wake-ups come
   * addressed to this client on `via`, a channel the waiter holds already (see deliver).
   */
  via?: string;
  /** Every message on the channel goes here instead of waking its sleepers. */
  onMessage?: (message: string) => void;
}
