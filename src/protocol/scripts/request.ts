import { defineScriptSentAsText } from '../define-script';

/**
 * The synchronizers' scripts take their request's window (`until`, server ms; see RequestWindow)
 * and how long its latch outlives it (`latchMs`); a copy that runs after the window rejects with a
 * LATE reply and takes no effect.
 */

/**
 * Settles a request that went unanswered (see lua/request/settle.lua): its latch's value when it
 * took effect, 'w' when it had not (and now never will), null when its latch is gone. Sent as its
 * text: it must reach Redis before the latch is gone, in one trip however slow the link.
 */
export const settleRequest = defineScriptSentAsText<
  [requestLatch: string],
  [until: number, latchMs: number],
  string | null
>('request/settle.lua');
