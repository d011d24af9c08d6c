import { randomBytes } from 'node:crypto';
import { PermitNotHeldError } from '../errors';
import { expirableSemaphoreKeys, type ExpirableSemaphoreKeys } from '../protocol/keys';
import type { LockContext } from '../context';
import {
  acquireExpirablePermit,
  addExpirablePermits,
  availableExpirablePermits,
  releaseExpirablePermit,
  updateExpirablePermitLease,
  withdrawExpirablePermit,
} from '../protocol/scripts';
import { checkCount, checkTime, rangeError, typeError } from '../util/validate';
import { Synchronizer, wakeForPermits, type Request } from './synchronizer';
import { waitForPermits } from './permit-wait';
import { MAX_PERMITS, parseWaitOptions } from './permit-arguments';
import type { PermitWaitOptions, RPermitExpirableSemaphore } from './types';

/** Redisson's permit ids: 16 random bytes, shown as 32 hex characters. */
function newPermitId(): string {
  return randomBytes(16).toString('hex');
}

/** An acquire request names the permit it takes: a re-sent copy finds it. */
interface PermitRequest extends Request {
  readonly id: string;
}

/** A permit's lease: no watchdog renews a permit, so -1 is one that never expires. */
const checkPermitLease = (value: unknown): number =>
  checkTime('leaseTime', value, { min: 1, allowMinusOne: true, minusOneMeans: 'never expires' });

function checkPermitId(value: unknown): string {
  if (typeof value !== 'string')
    throw typeError(`permitId must be a string of 32 hex characters; got ${typeof value}`);
  if (!/^[0-9a-fA-F]{32}$/.test(value)) {
    throw rangeError(
      `permitId must be 32 hex characters (a permit id acquire() returned); got "${value.slice(0, 40)}"`,
    );
  }
  return value.toLowerCase();
}

/**
 * Redisson's RPermitExpirableSemaphore: the available count at the name, the permits out in
 * {name}:timeout scored by the epoch ms they expire at. Expired permits go back whenever anyone
 * acquires or counts, and a waiter sleeps no longer than until the first permit out expires.
 */
export class PermitExpirableSemaphore extends Synchronizer implements RPermitExpirableSemaphore {
  private readonly keys: ExpirableSemaphoreKeys;

  constructor(context: LockContext, name: unknown) {
    super(context, name);
    this.keys = expirableSemaphoreKeys(this.name, this.slot);
  }

  trySetPermits(permits: number): Promise<boolean> {
    return this.trySetPermitCount(this.keys, permits);
  }

  async addPermits(permits: number): Promise<void> {
    checkCount('permits', permits, 'permits', { min: -MAX_PERMITS, max: MAX_PERMITS });
    const publish = await this.publishCommand();
    await this.change('addPermits', (request) =>
      addExpirablePermits(
        this.context.redis,
        [this.keys.permits, this.keys.channel, request.latch],
        [permits, request.lengthMs, publish, request.until],
      ),
    );
  }

  async availablePermits(): Promise<number> {
    const publish = await this.publishCommand();
    return this.call('availablePermits', () =>
      availableExpirablePermits(this.context.redis, this.expirableKeys(), [publish]),
    );
  }

  async acquire(options?: { leaseTime?: number; signal?: AbortSignal }): Promise<string> {
    const { given, signal } = parseWaitOptions(options, ['leaseTime']);
    if (given.waitTime !== undefined)
      throw typeError('acquire() waits until it gets a permit: use tryAcquire({ waitTime })');
    const id = await this.take(-1, this.leaseOf(given), signal);
    if (id === false) throw new Error('unreachable: a wait without end gave up');
    return id;
  }

  async tryAcquire(options?: PermitWaitOptions & { leaseTime?: number }): Promise<string | null> {
    const { waitTime, signal, given } = parseWaitOptions(options, ['leaseTime']);
    const id = await this.take(waitTime ?? 0, this.leaseOf(given), signal);
    return id === false ? null : id;
  }

  async release(permitId: string): Promise<void> {
    if (!(await this.tryRelease(permitId))) throw new PermitNotHeldError(this.name, permitId);
  }

  async tryRelease(permitId: string): Promise<boolean> {
    const id = checkPermitId(permitId);
    const publish = await this.publishCommand();
    const released = await this.change('release', (request) =>
      releaseExpirablePermit(
        this.context.redis,
        [this.keys.permits, this.keys.channel, this.keys.timeouts, request.latch],
        [id, request.lengthMs, publish, request.until],
      ),
    );
    return released === 1;
  }

  async updateLeaseTime(permitId: string, leaseTime: number): Promise<boolean> {
    const id = checkPermitId(permitId);
    const lease = checkPermitLease(leaseTime);
    const publish = await this.publishCommand();
    const updated = await this.call('updateLeaseTime', () =>
      updateExpirablePermitLease(this.context.redis, this.expirableKeys(), [id, lease, publish]),
    );
    return updated === 1;
  }

  private leaseOf(given: Record<string, unknown>): number {
    return given.leaseTime === undefined ? -1 : checkPermitLease(given.leaseTime);
  }

  private expirableKeys(): [string, string, string] {
    return [this.keys.permits, this.keys.timeouts, this.keys.channel];
  }

  /** The permit id taken, or false when waitTime passed first. */
  private async take(waitTime: number, leaseMs: number, signal?: AbortSignal): Promise<string | false> {
    this.throwIfClosed('closing', 'acquire');
    signal?.throwIfAborted();
    const { redis } = this.context;
    // The permit id names the request: a re-sent acquire finds its permit; a withdrawal is kept
    // under the id's latch, so that a copy running later takes nothing.
    return this.waitNamed('acquire', () =>
      waitForPermits<string, PermitRequest>(
        this.context,
        {
          attempt: async (request) => {
            const publish = await this.publishCommand();
            const ttl = await acquireExpirablePermit(
              redis,
              [...this.expirableKeys(), request.latch],
              [request.id, leaseMs, publish, request.until],
            );
            // Not available: look again at a release, or when the first permit out expires.
            return ttl === null ? { grant: request.id } : { retryIn: ttl === -3 ? -1 : ttl };
          },
          withdraw: async (request) =>
            withdrawExpirablePermit(
              redis,
              [this.keys.permits, this.keys.channel, this.keys.timeouts, request.latch],
              [request.id, this.windowMs, await this.publishCommand(), request.until],
            ),
          newRequest: async (limits) => {
            const id = newPermitId();
            return { ...(await this.newRequest(id, limits)), id };
          },
          openWakeSource: (limits) => this.listen(this.keys.channel, wakeForPermits, limits),
          sendUntilAnswered: (operation, stopAt, send) => this.sendUntilAnswered(operation, stopAt, send),
        },
        { name: this.name, waitTime, signal },
      ),
    );
  }
}
