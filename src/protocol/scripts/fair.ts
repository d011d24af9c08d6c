import { defineScript, type ScriptArg, type PublishCommand } from '../define-script';
import type { ReleaseAnswer, ReleaseWhich } from './lock';

/**
 * Added to a fair script's answer when it handed the lock to a waiter: the client that sent it
 * watches that hand-off (see HandoffWatches).
 */
export const HANDED_ON = 2;

/** Whether a fair script's answer says it handed the lock on (see HANDED_ON). */
export function handedOn(answer: number | null): boolean {
  return answer !== null && (answer & HANDED_ON) !== 0;
}

/** The fair lock's keys, in the order every fair script takes them. */
export type FairKeys = [
  lock: string,
  queue: string,
  deadlines: string,
  marker: string,
  channels: string,
  redissonQueue: string,
  redissonTimeouts: string,
];

/**
 * A first attempt that never queues (see lua/fair/try.lua): null when acquired or re-entered, -4
 * when waiters are queued on a free lock (acquireFairLock decides), else as acquireFairLock.
 */
export const tryFairLock = defineScript<
  [lock: string, queue: string, holdLatch: string, redissonQueue: string],
  [leaseMs: number, ownerId: string, markField: string],
  number | null
>('fair/try.lua');

/** Returns null when acquired, re-entered or handed the lock, else the holder's ttl (ms, -1 = no expiry). */
export const acquireFairLock = defineScript<
  [...FairKeys, holdLatch: string],
  [
    leaseMs: number,
    ownerId: string,
    waiterTimeoutMs: number,
    mode: 'try' | 'first' | 'queued' | 'reenter',
    markField: string,
    handoffTimeoutMs: number,
    /** Where this owner's client hears hand-offs (see clientAddress). */
    address: string,
    publish: PublishCommand,
  ],
  /** [ttl]: rlock's waiters keep a place in Redisson's queue; listen where that place is told. */
  number | [number] | null
>('fair/acquire.lua');

/**
 * Returns 1 when the owner's last hold is gone, 0 when it still holds, null when it held nothing;
 * 1 + HANDED_ON when the last hold went and the lock was handed to the next waiter.
 */
export const releaseFairLock = defineScript<
  [...FairKeys, holdLatch: string],
  [
    ownerId: string,
    latchMs: number,
    handoffTimeoutMs: number,
    which: ReleaseWhich,
    markField: string,
    publish: PublishCommand,
  ],
  ReleaseAnswer
>('fair/release.lua');

/**
 * Leaves the queue; returns 1 when a hand-off that came too late was given back, else 0, plus
 * HANDED_ON when the lock was handed to the next waiter.
 */
export const leaveFairQueue = defineScript<
  FairKeys,
  [ownerId: string, handoffTimeoutMs: number, publish: PublishCommand],
  number
>('fair/leave.lua');

/**
 * Hands the lock on if a hand-off this client made was never taken up (its provisional grant ran
 * out); HANDED_ON when it did, else 0.
 */
export const settleFairHandoff = defineScript<
  FairKeys,
  [handoffTimeoutMs: number, publish: PublishCommand],
  number
>('fair/settle.lua');

/** Takes over a hand-off with the owner's own lease, marked for a request; 1 when held, 0 when lost. */
export const confirmFairHandoff = defineScript<
  [...FairKeys, holdLatch: string],
  [ownerId: string, leaseMs: number, markField: string],
  0 | 1
>('fair/confirm.lua');

/**
 * Returns 1 when a lock existed and is gone now, 0 when there was none, plus HANDED_ON when it was
 * handed to the next waiter.
 */
export const forceReleaseFairLock = defineScript<
  FairKeys,
  [handoffTimeoutMs: number, publish: PublishCommand],
  number
>('fair/force-release.lua');

/**
 * Keys: each lock's FairKeys once. Args: waiter timeout, hand-off timeout, publish command, then per
 * lock the number of its waiters and their owner ids. Returns, for each owner id in that order, 1
 * when its place was kept and 0 when its waiter must look again (the place is gone, or a hand-off
 * to it is pending or was passed over); then for each lock HANDED_ON when the call handed it to a
 * waiter, else 0.
 */
export const refreshFairPlaces = defineScript<string[], ScriptArg[], number[]>('fair/refresh.lua');

/**
 * Returns 1 when the withdrawn request had taken a hold and it is released now, else 0, plus
 * HANDED_ON when that handed the lock to the next waiter.
 */
export const withdrawFairLock = defineScript<
  [...FairKeys, holdLatch: string],
  [ownerId: string, latchMs: number, handoffTimeoutMs: number, markField: string, publish: PublishCommand],
  number
>('fair/withdraw.lua');
