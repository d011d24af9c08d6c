import {
  countDownLatchKeys,
  LATCH_NEW_COUNT_MESSAGE,
  LATCH_ZERO_MESSAGE,
  type CountDownLatchKeys,
} from '../protocol/keys';
import type { LockContext } from '../context';
import { countDownLatch, deleteLatch, trySetLatchCount } from '../protocol/scripts';
import { acquireOrWait } from '../waiting/acquire-or-wait';
import { checkCount } from '../util/validate';
import { Synchronizer, wakeEveryone, type Request } from './synchronizer';
import { MAX_PERMITS, parseWaitOptions } from './permit-arguments';
import type { PermitWaitOptions, RCountDownLatch } from './types';

/**
 * Redisson's RCountDownLatch: the count at the name, deleted at zero with Redisson's "zero"
 * message on redisson_countdownlatch__channel__{name}. Waiting reads the count; nothing is taken,
 * so a wait leaves nothing to give back.
 */
export class CountDownLatch extends Synchronizer implements RCountDownLatch {
  private readonly keys: CountDownLatchKeys;

  constructor(context: LockContext, name: unknown) {
    super(context, name);
    this.keys = countDownLatchKeys(this.name, this.slot);
  }

  async trySetCount(count: number): Promise<boolean> {
    checkCount('count', count, 'counts', { min: 1, max: MAX_PERMITS });
    const publish = await this.publishCommand();
    const set = await this.change('trySetCount', (request) =>
      trySetLatchCount(this.context.redis, this.requestKeys(request), [
        count,
        request.lengthMs,
        publish,
        LATCH_NEW_COUNT_MESSAGE,
        request.until,
      ]),
    );
    return set === 1;
  }

  async countDown(): Promise<void> {
    const publish = await this.publishCommand();
    await this.change('countDown', (request) =>
      countDownLatch(this.context.redis, this.requestKeys(request), [
        request.lengthMs,
        publish,
        LATCH_ZERO_MESSAGE,
        request.until,
      ]),
    );
  }

  async getCount(): Promise<number> {
    return this.readCount();
  }

  async delete(): Promise<boolean> {
    const publish = await this.publishCommand();
    const deleted = await this.change('delete', (request) =>
      deleteLatch(this.context.redis, this.requestKeys(request), [
        request.lengthMs,
        publish,
        LATCH_NEW_COUNT_MESSAGE,
        request.until,
      ]),
    );
    return deleted === 1;
  }

  async await(options?: PermitWaitOptions): Promise<boolean> {
    const { waitTime = -1, signal } = parseWaitOptions(options);
    const opened = await this.waitNamed('await', () =>
      acquireOrWait({
        // Open (no count) is the "grant"; otherwise sleep until a message (or maxSleep).
        attempt: async (_kind, limits) => ((await this.readCount(limits)) <= 0 ? null : -1),
        undoGrant: () => Promise.resolve(),
        openWakeSource: (limits) => this.listen(this.keys.channel, wakeEveryone, limits),
        wakeSourceFirst: false,
        waitTime,
        commandTimeout: this.context.calls.commandTimeout,
        signal,
        closing: this.context.closing,
        maxSleep: this.context.watchdogTimeout,
        onRetry: (error, retryInMs) =>
          this.context.reportRedisError({ name: this.name, operation: 'await', error, retryInMs }),
      }),
    );
    return opened !== false;
  }

  private async readCount(limits?: { budget: number; signal?: AbortSignal }): Promise<number> {
    const value = await this.call('getCount', () => this.context.redis.get(this.keys.count), {
      ...limits,
      endsWithClose: limits !== undefined,
    });
    return value === null || value === undefined ? 0 : Math.max(0, Number(value));
  }

  private requestKeys(request: Request): [string, string, string] {
    return [this.keys.count, this.keys.channel, request.latch];
  }
}
