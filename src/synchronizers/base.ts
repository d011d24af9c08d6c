import { homeSlot, requestLatchKey, type SemaphoreKeys } from '../keys';
import type { LockContext } from '../locks/context';
import type { Subscription, WakePolicy } from '../pubsub';
import type { CallLimits } from '../redis-call';
import { callUntilAnswered, sendUntilAnswered } from '../resend';
import { trySetSemaphorePermits, type PublishCommand } from '../scripts';
import { checkLockName } from '../validate';
import type { StepLimits } from '../wait';
import { checkPermits } from './permits';

/**
 * What the synchronizers share: the name and its cluster slot, budgeted Redis calls, request
 * latches, and the subscription their waiters sleep on. They run on the locks' client machinery
 * (LockContext): one connection, one subscriber, one set of budgets and one close().
 */
export abstract class Synchronizer {
  readonly name: string;
  /** The slot every key of the object shares when a keyPrefix moves its name (see homeSlot). */
  protected readonly slot: number | undefined;

  constructor(
    protected readonly context: LockContext,
    name: unknown,
  ) {
    this.name = checkLockName(name);
    this.slot = homeSlot(this.name, context.keyPrefix, context.cluster);
  }

  /**
   * How long a request latch remembers its request, in ms: longer than rlock sends a request
   * again (sendUntilAnswered stops then), and than ioredis takes to re-send after a reconnect.
   */
  protected get latchMs(): number {
    return this.context.watchdogTimeout;
  }

  /** A fresh request latch (see lua/include/requests.lua). */
  protected newRequestLatch(): string {
    return requestLatchKey(this.name, this.context.newRequestId(), this.slot);
  }

  protected publishCommand(): PublishCommand | Promise<PublishCommand> {
    return this.context.publishCommand();
  }

  /** Runs one Redis command within its budget (see RedisCalls). */
  protected call<T>(operation: string, send: () => Promise<T>, limits?: CallLimits<T>): Promise<T> {
    this.context.closed.throwIfAborted();
    return this.context.calls.run(this.name, operation, send, limits);
  }

  /**
   * One call that changes the object, carrying a request latch: when Redis does not answer in
   * time it is sent again in the background until it does (the latch makes it count once), so a
   * release is never lost to a slow moment, while the caller gets the error.
   */
  protected callUntilAnswered<T>(operation: string, send: () => Promise<T>): Promise<T> {
    this.context.closed.throwIfAborted();
    return callUntilAnswered(this.context.calls, this.name, operation, this.latchMs, send);
  }

  /** Sends `send` until Redis answers it, through passing failures, for at most latchMs. */
  protected sendUntilAnswered(operation: string, send: () => Promise<unknown>): Promise<void> {
    return sendUntilAnswered(this.context.calls, this.name, operation, this.latchMs, send);
  }

  /** Sets the permits of a semaphore at `keys` when none are set yet (both semaphores' trySetPermits). */
  protected async trySetPermitCount(keys: SemaphoreKeys, permits: number): Promise<boolean> {
    checkPermits(permits);
    const publish = await this.publishCommand();
    const latched: [string, string, string] = [keys.permits, keys.channel, this.newRequestLatch()];
    const set = await this.callUntilAnswered('trySetPermits', () =>
      trySetSemaphorePermits(this.context.redis, latched, [permits, this.latchMs, publish]),
    );
    return set === 1;
  }

  /** Waiters sleep on `channel`, woken as `wakes` says, shared per client. */
  protected async listen(channel: string, wakes: WakePolicy, limits: StepLimits): Promise<Subscription> {
    const subscriber = await this.context.subscriber(this.name, limits);
    return subscriber.subscribe(channel, { ...limits, wakes });
  }
}

/** A semaphore's message is its new permit count: wake up to that many waiters (none at 0 or below). */
export const wakeForPermits: WakePolicy = (message) => {
  const count = Number(message);
  return Number.isFinite(count) ? Math.max(0, count) : Infinity;
};

/** A latch's waiters all go at once; any message (zero, new count, delete) makes them look. */
export const wakeEveryone: WakePolicy = () => Infinity;
