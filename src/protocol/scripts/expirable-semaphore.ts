import { defineScript, type PublishCommand } from '../define-script';

/** The permit-expirable semaphore's keys, in the order its acquire takes them. */
type ExpirableKeys = [permits: string, timeouts: string, channel: string];

/** Returns null when taken, else the ms until the first permit out expires (-1: none will), -3 when withdrawn. */
export const acquireExpirablePermit = defineScript<
  [...ExpirableKeys, requestLatch: string],
  [permitId: string, leaseMs: number, publish: PublishCommand, until: number],
  number | null
>('expirable-semaphore/acquire.lua');

/** Returns 1 when released, 0 when the permit was unknown or had expired. */
export const releaseExpirablePermit = defineScript<
  [permits: string, channel: string, timeouts: string, requestLatch: string],
  [permitId: string, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('expirable-semaphore/release.lua');

/** Returns 1 when the withdrawn request's permit is back, else 0 (`until`: the acquire's window). */
export const withdrawExpirablePermit = defineScript<
  [permits: string, channel: string, timeouts: string, requestLatch: string],
  [permitId: string, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('expirable-semaphore/withdraw.lua');

/** Returns the available permits after adding. */
export const addExpirablePermits = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  number
>('expirable-semaphore/add.lua');

/** Returns the available permits, expired ones put back first. */
export const availableExpirablePermits = defineScript<ExpirableKeys, [publish: PublishCommand], number>(
  'expirable-semaphore/available.lua',
);

/** Returns 1 when the permit's lease was updated, 0 when it is unknown or expired. */
export const updateExpirablePermitLease = defineScript<
  ExpirableKeys,
  [permitId: string, leaseMs: number, publish: PublishCommand],
  0 | 1
>('expirable-semaphore/update-lease.lua');
