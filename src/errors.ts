/** Base class of every error rlock raises itself; `code` is stable across versions. */
export class RLockError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
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
