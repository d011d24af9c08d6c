import { semaphoreKeys, type SemaphoreKeys } from '../protocol/keys';
import type { LockContext } from '../context';
import type { Subscription } from '../waiting/pubsub/subscriber';
import {
  acquireSemaphore,
  addSemaphorePermits,
  drainSemaphore,
  withdrawSemaphore,
} from '../protocol/scripts';
import { checkCount, checkWaitTime, isOptionsObject, typeError } from '../util/validate';
import { Synchronizer, wakeForPermits, type Request } from './synchronizer';
import { waitForPermits } from './permit-wait';
import { checkPermits, MAX_PERMITS, parseWaitOptions } from './permit-arguments';
import { runHolding } from './run-holding';
import type { PermitsHeld, PermitWaitOptions, RSemaphore } from './types';

/** Redisson's RSemaphore: the permit count at the name, releases announced on redisson_sc:{name}. */
export class Semaphore extends Synchronizer implements RSemaphore {
  private readonly keys: SemaphoreKeys;

  constructor(context: LockContext, name: unknown) {
    super(context, name);
    this.keys = semaphoreKeys(this.name, this.slot);
  }

  trySetPermits(permits: number): Promise<boolean> {
    return this.trySetPermitCount(this.keys, permits);
  }

  async addPermits(permits: number): Promise<void> {
    checkCount('permits', permits, 'permits', { min: -MAX_PERMITS, max: MAX_PERMITS });
    await this.add('addPermits', permits);
  }

  async release(permits = 1): Promise<void> {
    checkPermits(permits);
    if (permits === 0) return;
    await this.add('release', permits);
  }

  async availablePermits(): Promise<number> {
    const value = await this.call('availablePermits', () => this.context.redis.get(this.keys.permits));
    return value === null || value === undefined ? 0 : Number(value);
  }

  async drainPermits(): Promise<number> {
    return this.change('drainPermits', (request) =>
      drainSemaphore(
        this.context.redis,
        [this.keys.permits, request.latch],
        [request.lengthMs, request.until],
      ),
    );
  }

  async acquire(permits = 1, options?: { signal?: AbortSignal }): Promise<void> {
    checkPermits(permits);
    const { signal, given } = parseWaitOptions(options);
    if (given.waitTime !== undefined) {
      throw typeError('acquire() waits until it gets the permits: use tryAcquire({ waitTime })');
    }
    if (!(await this.take(permits, -1, signal))) throw new Error('unreachable: a wait without end gave up');
  }

  tryAcquire(permits?: number, waitTime?: number): Promise<boolean>;
  tryAcquire(options: PermitWaitOptions & { permits?: number }): Promise<boolean>;
  async tryAcquire(
    arg?: number | (PermitWaitOptions & { permits?: number }),
    waitTime?: number,
  ): Promise<boolean> {
    if (isOptionsObject(arg)) {
      if (waitTime !== undefined) {
        throw typeError(
          'waitTime belongs inside the options object when tryAcquire is given one: ' +
            'tryAcquire({ permits, waitTime })',
        );
      }
      const parsed = parseWaitOptions(arg, ['permits']);
      const permits = parsed.given.permits === undefined ? 1 : checkPermits(parsed.given.permits);
      return this.take(permits, parsed.waitTime ?? 0, parsed.signal);
    }
    const permits = arg === undefined ? 1 : checkPermits(arg);
    return this.take(permits, waitTime === undefined ? 0 : checkWaitTime(waitTime));
  }

  withPermits<T>(
    permits: number,
    fn: (held: PermitsHeld) => Promise<T> | T,
    options?: PermitWaitOptions,
  ): Promise<T> {
    try {
      checkPermits(permits);
    } catch (error) {
      return Promise.reject(error);
    }
    return runHolding(
      this.context,
      this.name,
      options,
      (waitTime, signal) => this.take(permits, waitTime, signal),
      () => this.release(permits),
      fn,
    );
  }

  /** Waits for `permits`; false when waitTime passed first. Zero permits are taken at once. */
  private async take(permits: number, waitTime: number, signal?: AbortSignal): Promise<boolean> {
    this.throwIfClosed('closing', 'acquire');
    signal?.throwIfAborted();
    if (permits === 0) return true;
    const { redis } = this.context;
    let source: Subscription | undefined;
    const granted = await this.waitNamed('acquire', () =>
      waitForPermits<true, Request>(
        this.context,
        {
          attempt: async (request) => {
            const [taken, available] = await acquireSemaphore(
              redis,
              [this.keys.permits, request.latch],
              [permits, this.windowMs, request.until],
            );
            if (taken === 1) return { grant: true };
            // Woken by a release that brought back fewer permits than this waiter needs: a waiter
            // behind it that needs fewer may take them, instead of sleeping until maxSleep.
            if (available > 0) source?.passOn(available);
            // Look again when a release announces permits (or, failing that, after maxSleep).
            return { retryIn: -1 };
          },
          withdraw: async (request) =>
            withdrawSemaphore(
              redis,
              [this.keys.permits, this.keys.channel, request.latch],
              [permits, this.windowMs, await this.publishCommand(), request.until],
            ),
          newRequest: (limits) => this.newRequest(undefined, limits),
          openWakeSource: async (limits) =>
            (source = await this.listen(this.keys.channel, wakeForPermits, limits)),
          sendUntilAnswered: (operation, stopAt, send) => this.sendUntilAnswered(operation, stopAt, send),
        },
        { name: this.name, waitTime, signal },
      ),
    );
    return granted !== false;
  }

  private async add(operation: string, permits: number): Promise<void> {
    const publish = await this.publishCommand();
    await this.change(operation, (request) =>
      addSemaphorePermits(
        this.context.redis,
        [this.keys.permits, this.keys.channel, request.latch],
        [permits, request.lengthMs, publish, request.until],
      ),
    );
  }
}
