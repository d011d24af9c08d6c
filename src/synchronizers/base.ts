import { homeSlot, requestLatchKey } from '../keys';
import type { LockContext } from '../locks/context';
import type { Subscription, WakePolicy } from '../pubsub';
import { isPassing, type CallLimits } from '../redis-call';
import type { PublishCommand } from '../scripts';
import { retryPause } from '../timing';
import { checkLockName } from '../validate';
import type { StepLimits } from '../wait';

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

  protected publishCommand(): Promise<PublishCommand> {
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
  protected async callUntilAnswered<T>(operation: string, send: () => Promise<T>): Promise<T> {
    const resend = (): void => void this.sendUntilAnswered(operation, send);
    try {
      return await this.call(operation, send, {
        onOrphaned: (fate) => {
          if (fate.ran === 'unknown') resend();
        },
      });
    } catch (error) {
      if (isPassing(error)) resend();
      throw error;
    }
  }

  /** Sends `send` until Redis answers it, through passing failures, for at most latchMs. */
  protected async sendUntilAnswered(operation: string, send: () => Promise<unknown>): Promise<void> {
    const until = performance.now() + this.latchMs;
    for (let tries = 1; ; tries += 1) {
      try {
        await this.context.calls.run(this.name, operation, send);
        return;
      } catch (error) {
        if (!isPassing(error)) return;
      }
      const pause = retryPause(tries);
      if (performance.now() + pause >= until) return;
      await new Promise((resolve) => setTimeout(resolve, pause).unref());
    }
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
