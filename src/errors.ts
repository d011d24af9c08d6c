/**
 * The class name of each code, spelled out: a minifying bundler renames classes, and an app that
 * logs `error.name` must still read what it can look up.
 */
const NAMES: Record<string, string> = {
  ERR_LOCK_NOT_HELD: 'LockNotHeldError',
  ERR_LOCK_TIMEOUT: 'LockTimeoutError',
  ERR_LOCK_NOT_REPLICATED: 'LockNotReplicatedError',
  ERR_LOCK_LOST: 'LockLostError',
  ERR_CLIENT_CLOSED: 'ClientClosedError',
  ERR_REDIS_UNAVAILABLE: 'RedisUnavailableError',
  ERR_REDIS_REPLY: 'RedisReplyError',
  ERR_PERMIT_NOT_HELD: 'PermitNotHeldError',
};

/** Base class of every error rlock raises itself; `code` is stable across versions. */
export class RLockError<Code extends string = string> extends Error {
  readonly code: Code;

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = NAMES[code] ?? new.target.name;
    this.code = code;
  }
}

/** Why an unlock() found nothing to release, when the client can tell (see LockNotHeldError). */
export interface NotHeldHint {
  /** Other owners of the same client that hold the lock now. */
  heldByOthers: string[];
  /** The lease was lost while this owner held it (see the lockLost event): why. */
  lost?: LockLostCode;
  /** The owner's holds belong to running withLock calls, which release them themselves. */
  heldForBody?: boolean;
  /** The caller runs in a task (withLock, runInTask). */
  inTask?: boolean;
  /** The owner's last unlock() was not answered by Redis; its release is being sent again. */
  releaseUnanswered?: boolean;
}

/** unlock() by an owner that holds no hold: never locked, released already, or the lease ran out. */
export class LockNotHeldError extends RLockError<'ERR_LOCK_NOT_HELD'> {
  readonly lockName: string;
  /** The owner that asked: `<clientId>:<ownerNumber>`, or an explicit owner id. */
  readonly ownerId: string;

  constructor(lockName: string, ownerId: string, hint: NotHeldHint = { heldByOthers: [] }) {
    super('ERR_LOCK_NOT_HELD', `lock "${lockName}" is not held by owner ${ownerId}: ${explainNotHeld(hint)}`);
    this.lockName = lockName;
    this.ownerId = ownerId;
  }
}

function explainNotHeld({ heldByOthers, lost, heldForBody, inTask, releaseUnanswered }: NotHeldHint): string {
  if (releaseUnanswered) {
    return (
      'its last unlock() was not answered by Redis (RedisUnavailableError), and that release is sent ' +
      'again in the background until Redis answers it (it counts once): there is nothing left to unlock'
    );
  }
  // A fixed lease that ran out outside withLock is expected and emits no lockLost event.
  if (lost === 'lease-expired') return 'its lease ran out while it was held (lease-expired)';
  if (lost !== undefined) {
    return `its lease was lost while it was held (${lost}; see the lockLost event)`;
  }
  if (heldForBody) {
    return (
      'its holds belong to running withLock calls, which release them themselves when their ' +
      'callback returns: unlock() only gives back what lock() or tryLock() took'
    );
  }
  const owners = inTask
    ? 'Each task (a withLock or runInTask call) is its own owner'
    : 'Outside a task each lock handle is its own owner';
  const fix = inTask
    ? 'unlock in the task that locked it, or act for its owner with runInTask(fn, { ownerId })'
    : 'unlock through the handle that locked it, or run both in one task (withLock, or client.runInTask)';
  if (heldByOthers.length > 0) {
    return `this client holds it for another owner (${heldByOthers.join(', ')}). ${owners}: ${fix}`;
  }
  return `it was never acquired by this owner, was released already, or its lease ran out. ${owners}: ${fix}`;
}

/** withLock() gave up because waitTime passed before the lock could be acquired. */
export class LockTimeoutError extends RLockError<'ERR_LOCK_TIMEOUT'> {
  readonly lockName: string;

  constructor(lockName: string, waitTime: number) {
    super('ERR_LOCK_TIMEOUT', `lock "${lockName}" could not be acquired within ${waitTime} ms`);
    this.lockName = lockName;
  }
}

/**
 * waitForReplicas: fewer replicas than required acknowledged an acquisition (which was given back
 * before this was thrown) or a release (done on the master: if the master fails before a replica
 * has it, the lock may come back on the promoted replica until its lease ends).
 */
export class LockNotReplicatedError extends RLockError<'ERR_LOCK_NOT_REPLICATED'> {
  readonly lockName: string;
  readonly operation: 'acquire' | 'release';
  readonly acknowledged: number;
  readonly required: number;

  constructor(lockName: string, operation: 'acquire' | 'release', acknowledged: number, required: number) {
    super(
      'ERR_LOCK_NOT_REPLICATED',
      operation === 'acquire'
        ? `lock "${lockName}": ${acknowledged} of ${required} replicas acknowledged the acquisition in time; ` +
            'the hold was given back'
        : `lock "${lockName}": released on the master, but ${acknowledged} of ${required} replicas ` +
            'acknowledged in time; a failover before they do may bring the lock back until its lease ends',
    );
    this.lockName = lockName;
    this.operation = operation;
    this.acknowledged = acknowledged;
    this.required = required;
  }
}

/** Why a held lease was lost: the `code` of a lockLost event and of a LockLostError. */
export type LockLostCode =
  /** Redis refused a renewal: the hold was released, expired or deleted by someone else. */
  | 'renewal-refused'
  /**
   * Renewals kept failing while the process ran (Redis unreachable, paused or restarting) until the
   * lease could have expired.
   */
  | 'renewal-failed'
  /**
   * A fixed lease ran out while withLock was running, or any lease ran out while the holder's
   * process stood still (its event loop blocked, the process paused), so nothing could renew it.
   */
  | 'lease-expired'
  /** forceUnlock() on this client deleted it. */
  | 'force-unlocked'
  /** The handle or task that held it was garbage-collected without unlocking it. */
  | 'orphaned'
  /** A fair-lock hand-off could not be taken over. */
  | 'handoff-lost'
  /** Redis had fewer holds than this client counted (found at unlock). */
  | 'not-in-redis'
  /** A RedLock or MultiLock holds fewer members than it needs. */
  | 'quorum-lost'
  /** close() is giving back what the client holds. */
  | 'client-closed';

/**
 * The reason of a withLock signal aborted because the lease is gone: the critical section no
 * longer runs exclusively. `lostCode` says why.
 */
export class LockLostError extends RLockError<'ERR_LOCK_LOST'> {
  readonly lockName: string;
  readonly ownerId: string;
  readonly lostCode: LockLostCode;

  constructor(lockName: string, ownerId: string, lostCode: LockLostCode, reason: string) {
    super('ERR_LOCK_LOST', `lock "${lockName}" was lost: ${reason}`);
    this.lockName = lockName;
    this.ownerId = ownerId;
    this.lostCode = lostCode;
  }
}

/** The LockClient was closed: pending waits reject with it, and so does every later call. */
export class ClientClosedError extends RLockError<'ERR_CLIENT_CLOSED'> {
  /** The lock, semaphore or latch the call was for (absent for a call of the client itself). */
  readonly lockName?: string;
  /** What was being done: 'acquire', 'release', 'await', 'isLocked', ... (absent when unknown). */
  readonly operation?: string;

  constructor(
    message = 'the LockClient is closed; create a new LockClient to take locks again',
    about?: { lockName: string; operation?: string },
  ) {
    super('ERR_CLIENT_CLOSED', message);
    if (about) {
      this.lockName = about.lockName;
      if (about.operation !== undefined) this.operation = about.operation;
    }
  }
}

/**
 * `error` as the caller of `operation` on `lockName` gets it: the client's ClientClosedError,
 * shared by everything close() ends, becomes one that names the lock and the operation.
 */
export function closedFor(error: unknown, lockName: string, operation: string): unknown {
  if (!(error instanceof ClientClosedError) || error.lockName !== undefined) return error;
  return new ClientClosedError(`lock "${lockName}": ${operation} failed: ${error.message}`, {
    lockName,
    operation,
  });
}

/**
 * Redis did not answer in time (`commandTimeout`, or the time left of a wait), or could not be
 * reached at all (connection refused or closed, ioredis gave up retrying). The operation may or may
 * not have run: anything it took is given back once Redis answers. `cause` is what ioredis said.
 */
export class RedisUnavailableError extends RLockError<'ERR_REDIS_UNAVAILABLE'> {
  readonly lockName: string;
  /** What rlock was doing: 'acquire', 'release', 'renew', 'subscribe', ... */
  readonly operation: string;

  constructor(lockName: string, operation: string, detail: string, options?: { cause?: unknown }) {
    super('ERR_REDIS_UNAVAILABLE', `lock "${lockName}": ${operation} failed: ${detail}`, options);
    this.lockName = lockName;
    this.operation = operation;
  }
}

/**
 * Redis answered with an error: WRONGTYPE (something else is stored at a key of the lock), OOM
 * (maxmemory with noeviction), READONLY (the connection reaches a replica), NOSCRIPT, ... `cause` is
 * the original ReplyError; `replyCode` its first word.
 */
export class RedisReplyError extends RLockError<'ERR_REDIS_REPLY'> {
  readonly lockName: string;
  readonly operation: string;
  /** The error's code as Redis sent it: 'WRONGTYPE', 'OOM', 'READONLY', 'ERR', ... */
  readonly replyCode: string;

  constructor(
    lockName: string,
    operation: string,
    replyCode: string,
    reply: string,
    options?: { cause?: unknown },
  ) {
    super('ERR_REDIS_REPLY', `lock "${lockName}": ${operation} failed: Redis answered ${reply}`, options);
    this.lockName = lockName;
    this.operation = operation;
    this.replyCode = replyCode;
  }
}

/**
 * A permit-expirable semaphore was asked to release a permit it does not have out: never acquired
 * there, released already, or its lease ran out (expired permits go back by themselves).
 */
export class PermitNotHeldError extends RLockError<'ERR_PERMIT_NOT_HELD'> {
  /** The semaphore's name. */
  readonly lockName: string;
  readonly permitId: string;

  constructor(lockName: string, permitId: string) {
    super(
      'ERR_PERMIT_NOT_HELD',
      `semaphore "${lockName}" has no permit ${permitId} out: it was never acquired there, was ` +
        'released already, or its lease ran out (an expired permit returns to the semaphore by ' +
        'itself). Use tryRelease() where that is expected, or updateLeaseTime() to keep a permit longer',
    );
    this.lockName = lockName;
    this.permitId = permitId;
  }
}
