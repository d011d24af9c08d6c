/** Base class of every error rlock raises itself; `code` is stable across versions. */
export class RLockError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** unlock() by an owner that holds no hold: never locked, released already, or the lease ran out. */
export class LockNotHeldError extends RLockError {
  readonly lockName: string;

  constructor(lockName: string, ownerId: string) {
    super(
      'ERR_LOCK_NOT_HELD',
      `lock "${lockName}" is not held by owner ${ownerId}: it was never acquired by this owner, ` +
        'was released already, or its lease ran out (see the lockLost event)',
    );
    this.lockName = lockName;
  }
}

/** withLock() gave up because waitTime passed before the lock could be acquired. */
export class LockTimeoutError extends RLockError {
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
export class LockNotReplicatedError extends RLockError {
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

/** The LockClient was closed: pending waits reject with it, and so does every later call. */
export class ClientClosedError extends RLockError {
  constructor() {
    super('ERR_CLIENT_CLOSED', 'the LockClient is closed; create a new LockClient to take locks again');
  }
}

/**
 * Redis did not answer in time (`commandTimeout`, or the time left of a wait), or could not be
 * reached at all (connection refused or closed, ioredis gave up retrying). The operation may or may
 * not have run: anything it took is given back once Redis answers. `cause` is what ioredis said.
 */
export class RedisUnavailableError extends RLockError {
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
export class RedisReplyError extends RLockError {
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
