import { homeSlot, requestLatchKey, type SemaphoreKeys } from '../protocol/keys';
import type { LockContext } from '../context';
import type { Subscription, WakePolicy } from '../waiting/pubsub/subscriber';
import type { CallLimits } from '../redis/redis-calls';
import {
  changeOnce,
  openWindow,
  sendUntilAnswered,
  settleByLatch,
  windowLength,
  type Change,
  type RequestWindow,
} from '../protocol/resend';
import { trySetSemaphorePermits, type PublishCommand } from '../protocol/scripts';
import { closedFor } from '../errors';
import { checkLockName } from '../util/validate';
import type { StepLimits } from '../waiting/acquire-or-wait';
import { checkPermits } from './permit-arguments';

/** One request that changes a synchronizer: its latch key and its window (see lua/include/requests.lua). */
export interface Request extends RequestWindow {
  readonly latch: string;
}

/**
 * What the synchronizers share: the name and its cluster slot, budgeted Redis calls, requests
 * with their latches and windows, and the subscription their waiters sleep on. They run on the
 * locks' client machinery (LockContext): one connection, one subscriber, one set of budgets and
 * one close().
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
   * How long a request's copies may take effect, in ms, and how long its latch outlives that
   * (the scripts' latch_ms): watchdogTimeout, or longer when commandTimeout asks for it.
   */
  protected get windowMs(): number {
    return windowLength(this.context.watchdogTimeout, this.context.calls.commandTimeout);
  }

  /**
   * A fresh request (see lua/include/requests.lua): a latch named by `id` (default: a new request
   * id of the client) and a window of `lengthMs` from now, by Redis' clock (read first, within
   * `limits`, the first time).
   */
  protected async newRequest(
    id = this.context.newRequestId(),
    limits?: StepLimits,
    lengthMs = this.windowMs,
  ): Promise<Request> {
    const window = await openWindow(this.context.clock, this.name, lengthMs, limits);
    return { ...window, latch: requestLatchKey(this.name, id, this.slot) };
  }

  protected publishCommand(): PublishCommand | Promise<PublishCommand> {
    return this.context.publishCommand();
  }

  /** Runs one Redis command within its budget (see RedisCalls). */
  protected call<T>(operation: string, send: () => Promise<T>, limits?: CallLimits<T>): Promise<T> {
    this.throwIfClosed('closed', operation);
    return this.context.calls.run(this.name, operation, send, limits);
  }

  /**
   * One call that changes the object, under a fresh request, within one commandTimeout (the
   * clock's first reading included). When Redis does not answer in time the caller gets the error,
   * and the change goes on in the background until it has taken effect once (see changeOnce): the
   * request is settled through its latch, and made again when it did not take effect, so a release
   * is lost neither to a slow moment nor to an outage longer than its window. `send` writes the
   * request's latch to outlive its window by `request.lengthMs`; its answer is a number, which is
   * what the latch remembers.
   */
  protected async change(operation: string, send: (request: Request) => Promise<number>): Promise<number> {
    this.throwIfClosed('closed', operation);
    const change: Change<number, Request> = {
      open: (lengthMs, limits) => this.newRequest(undefined, limits, lengthMs),
      send,
      settle: (request) => settleByLatch(this.context.redis, request, Number),
    };
    return changeOnce(this.context.calls, this.name, operation, change, this.windowMs);
  }

  /**
   * 'closing': close() has begun (no new wait starts); 'closed': close() is done (no call goes out).
   * The error names this object and `operation`.
   */
  protected throwIfClosed(stage: 'closing' | 'closed', operation: string): void {
    const signal = stage === 'closing' ? this.context.closing : this.context.closed;
    if (signal.aborted) throw closedFor(signal.reason, this.name, operation);
  }

  /** A wait for `operation`, whose ClientClosedError (close() ended it) names this object. */
  protected async waitNamed<T>(operation: string, wait: () => Promise<T>): Promise<T> {
    try {
      this.throwIfClosed('closing', operation);
      return await wait();
    } catch (error) {
      throw closedFor(error, this.name, operation);
    }
  }

  /** Sends `send` until Redis answers it, through passing failures, until `stopAt` (performance.now()). */
  protected sendUntilAnswered(
    operation: string,
    stopAt: number,
    send: () => Promise<unknown>,
  ): Promise<void> {
    return sendUntilAnswered(this.context.calls, this.name, operation, stopAt, send);
  }

  /** Sets the permits of a semaphore at `keys` when none are set yet (both semaphores' trySetPermits). */
  protected async trySetPermitCount(keys: SemaphoreKeys, permits: number): Promise<boolean> {
    checkPermits(permits);
    const publish = await this.publishCommand();
    const set = await this.change('trySetPermits', (request) =>
      trySetSemaphorePermits(
        this.context.redis,
        [keys.permits, keys.channel, request.latch],
        [permits, request.lengthMs, publish, request.until],
      ),
    );
    return set === 1;
  }

  /** Waiters sleep on `channel`, woken as `wakes` says, shared per client. */
  protected async listen(channel: string, wakes: WakePolicy, limits: StepLimits): Promise<Subscription> {
    const subscriber = await this.context.subscriber(this.name, limits);
    return subscriber.subscribe(channel, { ...limits, wakes, lock: this.name });
  }
}

/** A semaphore's message is its new permit count: wake up to that many waiters (none at 0 or below). */
export const wakeForPermits: WakePolicy = (message) => {
  const count = Number(message);
  return Number.isFinite(count) ? Math.max(0, count) : Infinity;
};

/** A latch's waiters all go at once; any message (zero, new count, delete) makes them look. */
export const wakeEveryone: WakePolicy = () => Infinity;
