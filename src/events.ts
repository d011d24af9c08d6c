import type { EventEmitter } from 'node:events';
import { debuglog } from 'node:util';
import { ClientClosedError, type LockLostCode } from './errors';

/**
 * The LockClient's events, and the one place that builds them. The lock path asks `observes()`
 * first: while nobody listens (and NODE_DEBUG does not name rlock) it builds no event object and
 * takes no extra time stamp.
 */

/**
 * Which kind of lock an event is about: 'read' and 'write' are the halves of a read-write lock.
 * More kinds may come as the package grows: a switch over it should have a default branch.
 */
export type LockKind = 'lock' | 'fair' | 'fenced' | 'spin' | 'read' | 'write' | 'multi' | 'red';

/** A lock was acquired (re-entries too) by lock(), tryLock(), withLock() or a fenced lock's calls. */
export interface AcquiredEvent {
  /** The lock's name; for a MultiLock or RedLock, the group's name (`RedLock(a, b, c)`). */
  name: string;
  kind: LockKind;
  /** The owner that acquired: `<clientId>:<ownerNumber>`, or an explicit owner id. */
  ownerId: string;
  /** From the call to the grant, in ms. */
  waitMs: number;
  /** Whether another holder made it wait (Redis answered that the lock was held, and it slept). */
  contended: boolean;
  /** The lease asked for, in ms; -1 when the watchdog keeps the lease. */
  leaseTime: number;
  /** The fencing token of this acquisition, for fenced locks. */
  token?: number;
}

/** Why an acquisition ended without the lock. */
export type NotAcquiredReason =
  /** The wait time passed (for tryLock() with no wait: the one attempt found it held). */
  | 'timeout'
  /** The caller's signal aborted. */
  | 'aborted'
  /** The LockClient was closing or closed. */
  | 'closed'
  /** Redis failed (see `error`), or bad input. */
  | 'error';

/** An acquisition ended without the lock. */
export interface NotAcquiredEvent {
  name: string;
  kind: LockKind;
  ownerId: string;
  /** From the call until it gave up, in ms. */
  waitMs: number;
  reason: NotAcquiredReason;
  /**
   * What the call rejected with, unless it simply answered false (timeout). An abort reason that
   * is not an Error (`controller.abort('shutdown')`) comes as an Error whose `cause` is that reason
   * (the call itself still rejects with the reason as given).
   */
  error?: Error;
}

/** A hold was released (unlock(), the end of withLock, or close() giving back what is held). */
export interface ReleasedEvent {
  name: string;
  kind: LockKind;
  ownerId: string;
  /**
   * How long this hold was held, in ms. Absent when this client did not take it (an explicit
   * owner id releasing a hold taken by another process).
   */
  heldMs?: number;
  /** Whether this was the owner's last hold (the lock is free for others now). */
  freed: boolean;
}

/** Redis failed something rlock keeps trying by itself (see the client's 'redisError' event). */
export interface RedisErrorReport {
  /** The lock (or, for a subscription, the channel) it was for. */
  name: string;
  operation: string;
  error: unknown;
  /** When it is tried again, in ms; absent when it is not (the outcome is handled otherwise). */
  retryInMs?: number;
}

/** Emitted when a lease this client held is gone while it was still held. */
export interface LockLostEvent {
  name: string;
  /** The owner that held it: `<clientId>:<ownerNumber>`, or an explicit owner id. */
  ownerId: string;
  /** Why, as a stable code. */
  code: LockLostCode;
  /** Why, in words. */
  reason: string;
}

/**
 * Redis failed, or did not answer in time, something rlock goes on with by itself: a watchdog
 * renewal, a fair-lock place refresh, a subscription, a hand-off confirmation, or an attempt of a
 * wait that rides out the outage (`lock()` waits until Redis is back). The call that needs the
 * answer still gets its own error; this event makes an outage visible while nothing fails yet.
 */
export interface RedisErrorEvent {
  /** The lock, or for a subscription its channel. */
  name: string;
  /** What failed: 'acquire', 'renew', 'refresh', 'subscribe', 'confirm', ... */
  operation: string;
  error: Error;
  /** When it is tried again, in ms; absent when it is not. */
  retryInMs?: number;
}

/** Every event of LockClient, by name, with its listener's arguments. */
export interface LockClientEvents {
  acquired: [AcquiredEvent];
  notAcquired: [NotAcquiredEvent];
  released: [ReleasedEvent];
  lockLost: [LockLostEvent];
  redisError: [RedisErrorEvent];
}

export type LockClientEventName = keyof LockClientEvents;

const log = debuglog('rlock');
/** NODE_DEBUG is read once, when the process starts: a constant test on the lock path. */
export const DEBUG = log.enabled;

/** Writes a debug line (NODE_DEBUG=rlock); call it behind `if (DEBUG)`. */
export function debug(format: string, ...args: unknown[]): void {
  log(format, ...args);
}

/** What a call rejected with, as an Error: listeners read `message` and `stack` whatever it was. */
function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(String(thrown), { cause: thrown });
}

/** A lock as the events name it. */
export interface Observed {
  readonly name: string;
  readonly kind: LockKind;
}

/** Emits the client's events; held by every lock the client makes. */
/**
 * Emits without letting a listener's exception into the lock path: thrown there, it would fail a
 * call whose lock is already held (or a renewal), and the caller could not tell. It is thrown again
 * on its own, as an uncaught exception, so the bug in the listener is not hidden either.
 */
export function emitSafely<K extends keyof LockClientEvents>(
  emitter: EventEmitter<LockClientEvents>,
  event: K,
  ...args: LockClientEvents[K]
): void {
  try {
    (emitter.emit as (event: K, ...args: LockClientEvents[K]) => boolean)(event, ...args);
  } catch (error) {
    process.nextTick(() => {
      throw error;
    });
  }
}

export class LockEvents {
  constructor(private readonly emitter: EventEmitter<LockClientEvents>) {}

  /** Whether anything reads `event` (a listener, or the debug log). */
  observes(event: 'acquired' | 'released'): boolean {
    return (
      DEBUG || this.emitter.listenerCount(event) > 0 || (event === 'acquired' && this.wantsNotAcquired())
    );
  }

  /**
   * Runs one acquisition and reports how it ended. `take` gets a function to call when the wait
   * sleeps on another holder.
   */
  async acquisition<T extends false | { token?: number }>(
    lock: Observed,
    ownerId: string,
    leaseTime: number,
    signal: AbortSignal | undefined,
    take: (contended: () => void) => Promise<T>,
  ): Promise<T> {
    const startedAt = performance.now();
    let contended = false;
    if (DEBUG) debug('%s %s: acquire by %s (lease %d)', lock.kind, lock.name, ownerId, leaseTime);
    let result: T;
    try {
      result = await take(() => {
        contended = true;
      });
    } catch (error) {
      const reason: NotAcquiredReason =
        error instanceof ClientClosedError
          ? 'closed'
          : signal?.aborted && error === signal.reason
            ? 'aborted'
            : 'error';
      this.notAcquired(lock, ownerId, startedAt, reason, error);
      throw error;
    }
    if (result === false) {
      this.notAcquired(lock, ownerId, startedAt, 'timeout');
      return result;
    }
    const waitMs = performance.now() - startedAt;
    const token = result.token;
    if (DEBUG) {
      debug(
        '%s %s: acquired by %s after %s ms%s',
        lock.kind,
        lock.name,
        ownerId,
        waitMs.toFixed(1),
        contended ? ' (contended)' : '',
      );
    }
    if (this.emitter.listenerCount('acquired') > 0) {
      const event: AcquiredEvent = {
        name: lock.name,
        kind: lock.kind,
        ownerId,
        waitMs,
        contended,
        leaseTime,
      };
      if (token !== undefined) event.token = token;
      emitSafely(this.emitter, 'acquired', event);
    }
    return result;
  }

  /** A hold was released; `acquiredAt` is its performance.now() grant time, if this client took it. */
  released(lock: Observed, ownerId: string, acquiredAt: number | undefined, freed: boolean): void {
    const heldMs = acquiredAt === undefined ? undefined : performance.now() - acquiredAt;
    if (DEBUG) {
      debug(
        '%s %s: released by %s after %s ms%s',
        lock.kind,
        lock.name,
        ownerId,
        heldMs?.toFixed(1) ?? '?',
        freed ? ' (free)' : ' (still held)',
      );
    }
    if (this.emitter.listenerCount('released') === 0) return;
    const event: ReleasedEvent = { name: lock.name, kind: lock.kind, ownerId, freed };
    if (heldMs !== undefined) event.heldMs = heldMs;
    emitSafely(this.emitter, 'released', event);
  }

  private wantsNotAcquired(): boolean {
    return this.emitter.listenerCount('notAcquired') > 0;
  }

  private notAcquired(
    lock: Observed,
    ownerId: string,
    startedAt: number,
    reason: NotAcquiredReason,
    error?: unknown,
  ): void {
    const waitMs = performance.now() - startedAt;
    if (DEBUG)
      debug(
        '%s %s: not acquired by %s after %s ms: %s',
        lock.kind,
        lock.name,
        ownerId,
        waitMs.toFixed(1),
        reason,
      );
    if (!this.wantsNotAcquired()) return;
    const event: NotAcquiredEvent = { name: lock.name, kind: lock.kind, ownerId, waitMs, reason };
    if (error !== undefined) event.error = asError(error);
    emitSafely(this.emitter, 'notAcquired', event);
  }
}
