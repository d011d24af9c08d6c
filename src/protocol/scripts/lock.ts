import { defineScript, type ScriptArg, type ReleaseAnnouncement } from '../define-script';

/**
 * Returns null when acquired or re-entered, else the holder's remaining ttl (ms, -1 = no expiry),
 * or -3 when the request was withdrawn before it ran.
 */
export const acquireLock = defineScript<
  [lock: string, holdLatch: string],
  [leaseMs: number, ownerId: string, markField: string],
  number | null
>('lock/acquire.lua');

/** Returns [1, token] when acquired or re-entered, [0, ttl] when another owner holds the lock. */
export const acquireFencedLock = defineScript<
  [lock: string, holdLatch: string, tokenCounter: string],
  [leaseMs: number, ownerId: string, markField: string],
  [1 | 0, number]
>('fenced/acquire.lua');

/**
 * Which hold a release gives back: the one its request marks, or any one of the owner's (for a hold
 * Redis did not mark; see lua/include/holds.lua), given as the end of the release's window (server
 * ms, see RequestWindow): a copy that runs later takes nothing.
 */
export type ReleaseWhich = 'marked' | number;

/** What the release of the last hold answers when it handed the lock on or woke a waiting client. */
export const RELEASED_AND_HANDED_ON = 3;

/**
 * A release script's answer: 1 free, 0 still held by the owner, null the hold was gone, or
 * RELEASED_AND_HANDED_ON (see LockHandle.releaseAnswered).
 */
export type ReleaseAnswer = 0 | 1 | typeof RELEASED_AND_HANDED_ON | null;

/**
 * Returns 1 when the lock is free now, 0 when the owner still holds it, null when the hold is gone;
 * 1 + HANDED_ON when it is free and a waiting client was woken.
 */
export const releaseLock = defineScript<
  [lock: string, channel: string, holdLatch: string, waiters: string],
  [ownerId: string, latchMs: number, publish: ReleaseAnnouncement, which: ReleaseWhich, markField: string],
  ReleaseAnswer
>('lock/release.lua');

/** Returns 1 when a lock existed and is gone now, 0 when there was none. */
export const forceReleaseLock = defineScript<
  [lock: string, channel: string, waiters: string],
  [publish: ReleaseAnnouncement],
  0 | 1
>('lock/force-release.lua');

/**
 * An attempt of a getLock wait that listens for wake-ups, keeping the client among the lock's
 * waiters (see lua/include/lock-waiters.lua): null when acquired or re-entered; the holder's ttl;
 * [ttl] when the holder is not an rlock client (its release is heard only on Redisson's channel);
 * -3 when withdrawn.
 */
export const waitForLock = defineScript<
  [lock: string, holdLatch: string, waiters: string],
  [leaseMs: number, ownerId: string, markField: string, address: string, alone: '1' | '0'],
  number | [number] | null
>('lock/wait.lua');

/**
 * Passes a getLock wake-up on to the client that has waited longest, when the lock is free;
 * HANDED_ON when one was woken, else 0.
 */
export const passOnLockWakeup = defineScript<[lock: string, waiters: string], [ownAddress: string], number>(
  'lock/pass-on.lua',
);

/** Returns, for each lock, 1 when renewed and 0 when its owner no longer holds it. */
export const renewLocks = defineScript<string[], ScriptArg[], number[]>('lock/renew.lua');

/** Returns 1 when the withdrawn request had taken a hold and it is released now, else 0. */
export const withdrawLock = defineScript<
  [lock: string, channel: string, holdLatch: string, waiters: string],
  [ownerId: string, latchMs: number, publish: ReleaseAnnouncement, markField: string],
  0 | 1
>('lock/withdraw.lua');
