import { defineScript, type ScriptArg, type PublishCommand } from '../define-script';
import type { ReleaseWhich } from './lock';

/**
 * Returns null when the read lock is acquired or re-entered, else how long to wait at most (ms; -1
 * = no expiry), or -3 when the request was withdrawn before it ran.
 */
export const acquireReadLock = defineScript<
  [lock: string, holdLatch: string, timeoutPrefix: string, writers: string, preference: string],
  [leaseMs: number, ownerId: string, writeField: string, markField: string],
  number | null
>('rwlock/read-acquire.lua');

/** As acquireReadLock, for the write lock; a waiting writer of a writer-preferring name keeps a place. */
export const acquireWriteLock = defineScript<
  [lock: string, holdLatch: string, writers: string, preference: string],
  [
    leaseMs: number,
    writeField: string,
    mode: 'try' | 'first' | 'queued',
    placeMs: number,
    prefer: '1' | '',
    markField: string,
  ],
  number | null
>('rwlock/write-acquire.lua');

/** The keys of a read hold's release and withdrawal. */
type ReadReleaseKeys = [
  lock: string,
  channel: string,
  holdLatch: string,
  timeoutPrefix: string,
  timeoutBase: string,
  writers: string,
  preference: string,
];

/** The keys of a write hold's release and withdrawal. */
type WriteReleaseKeys = [
  lock: string,
  channel: string,
  holdLatch: string,
  timeoutBase: string,
  writers: string,
  preference: string,
];

/** Returns 1 when the owner's last read hold is gone, 0 when it still reads, null when the hold is gone. */
export const releaseReadLock = defineScript<
  ReadReleaseKeys,
  [ownerId: string, latchMs: number, publish: PublishCommand, which: ReleaseWhich, markField: string],
  0 | 1 | null
>('rwlock/read-release.lua');

/** Returns 1 when the write lock is released, 0 when the owner still writes, null when the hold is gone. */
export const releaseWriteLock = defineScript<
  WriteReleaseKeys,
  [writeField: string, latchMs: number, publish: PublishCommand, which: ReleaseWhich, markField: string],
  0 | 1 | null
>('rwlock/write-release.lua');

/** Returns 1 when the withdrawn read request had taken a hold and it is released now, else 0. */
export const withdrawReadLock = defineScript<
  ReadReleaseKeys,
  [ownerId: string, latchMs: number, publish: PublishCommand, markField: string],
  0 | 1
>('rwlock/read-withdraw.lua');

/** Returns 1 when the withdrawn write request had taken a hold and it is released now, else 0. */
export const withdrawWriteLock = defineScript<
  WriteReleaseKeys,
  [writeField: string, latchMs: number, publish: PublishCommand, markField: string],
  0 | 1
>('rwlock/write-withdraw.lua');

/** Returns 1 when a lock in that mode existed and is gone now, else 0. */
export const forceReleaseReadWriteLock = defineScript<
  [lock: string, channel: string, writers: string, preference: string],
  [mode: 'read' | 'write', publish: PublishCommand],
  0 | 1
>('rwlock/force-release.lua');

/**
 * Keys: per hold its lock hash, its read timeout prefix (a write hold: the hash again) and the
 * name's writer-preference flag. Args: lease, then per hold its field and 'r' or 'w'.
 */
export const renewReadWriteLocks = defineScript<string[], ScriptArg[], number[]>('rwlock/renew.lua');

/** A waiting writer leaves its place; returns 1 when it had one. */
export const leaveWriterQueue = defineScript<
  [writers: string, channel: string, lock: string, preference: string],
  [writeField: string, publish: PublishCommand],
  0 | 1
>('rwlock/leave.lua');

/** Sets the lease of an owner's read holds; returns 1 when set, 0 when it holds none. */
export const setReadLease = defineScript<
  [lock: string, timeoutPrefix: string, timeoutBase: string],
  [leaseMs: number, ownerId: string],
  0 | 1
>('rwlock/set-read-lease.lua');
