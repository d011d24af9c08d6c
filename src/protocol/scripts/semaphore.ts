import { defineScript, type PublishCommand } from '../define-script';

/** Returns [1, 0] when the permits were taken, [0, available] when too few are, [-3, 0] when withdrawn. */
export const acquireSemaphore = defineScript<
  [permits: string, requestLatch: string],
  [permits: number, latchMs: number, until: number],
  [1 | 0 | -3, number]
>('semaphore/acquire.lua');

/** Returns the available permits after adding (release, addPermits; negative takes away). */
export const addSemaphorePermits = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  number
>('semaphore/add.lua');

/** Returns 1 when the request had taken permits and they are back, else 0 (`until`: the acquire's window). */
export const withdrawSemaphore = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('semaphore/withdraw.lua');

/** Returns 1 when the permits were set, 0 when they were set already. */
export const trySetSemaphorePermits = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('semaphore/try-set.lua');

/** Returns how many permits were taken. */
export const drainSemaphore = defineScript<
  [permits: string, requestLatch: string],
  [latchMs: number, until: number],
  number
>('semaphore/drain.lua');
