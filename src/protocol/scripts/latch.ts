import { defineScript, type PublishCommand } from '../define-script';

/** Returns 1 when the count was set, 0 when one was set already. */
export const trySetLatchCount = defineScript<
  [count: string, channel: string, requestLatch: string],
  [count: number, latchMs: number, publish: PublishCommand, message: string, until: number],
  0 | 1
>('latch/try-set.lua');

/** Returns the count left (0: open). */
export const countDownLatch = defineScript<
  [count: string, channel: string, requestLatch: string],
  [latchMs: number, publish: PublishCommand, message: string, until: number],
  number
>('latch/count-down.lua');

/** Returns 1 when a latch existed and is gone, else 0. */
export const deleteLatch = defineScript<
  [count: string, channel: string, requestLatch: string],
  [latchMs: number, publish: PublishCommand, message: string, until: number],
  0 | 1
>('latch/delete.lua');
