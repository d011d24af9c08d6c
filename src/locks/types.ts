/** The public shape of every lock kind (Redisson's RLock, in milliseconds and Promises). */

export interface LockOptions {
  /** Lease in ms; -1 (default) lets the watchdog keep the lock for as long as it is held. */
  leaseTime?: number;
  /** Aborting it rejects the wait with the signal's reason and leaves nothing behind in Redis. */
  signal?: AbortSignal;
}

export interface TryLockOptions extends LockOptions {
  /** How long to wait in ms: 0 (default) makes one attempt, -1 waits forever. */
  waitTime?: number;
}

export interface Held {
  /** Aborts when the lease is lost (renewal refused or failing past expiry, lease ran out) or the caller's signal aborts. */
  signal: AbortSignal;
  /** Fencing token, for locks that issue them. */
  token?: number;
}

export interface WithLockOptions extends LockOptions {
  /** How long to wait in ms; -1 (default) waits forever. LockTimeoutError when it passes. */
  waitTime?: number;
}

export interface RLock {
  readonly name: string;
  /** Waits until acquired. No leaseTime (or -1): the watchdog keeps the lease while held. */
  lock(leaseTime?: number): Promise<void>;
  lock(options: LockOptions): Promise<void>;
  /** One attempt with no arguments (never waits); otherwise waits up to waitTime ms. */
  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, leaseTime?: number): Promise<boolean>;
  tryLock(options: TryLockOptions): Promise<boolean>;
  /** Releases one hold of the current owner; LockNotHeldError when it holds none. */
  unlock(): Promise<void>;
  /** Deletes the lock whoever holds it; true when a lock existed. Wakes a waiter. */
  forceUnlock(): Promise<boolean>;
  isLocked(): Promise<boolean>;
  isHeldByCurrentTask(): Promise<boolean>;
  /** Holds of the current owner, 0 when none. */
  getHoldCount(): Promise<number>;
  /** ms; -2 when not locked, -1 when locked without expiry. */
  remainTimeToLive(): Promise<number>;
  /** Acquires, runs fn as the owner, always releases. LockTimeoutError when waitTime passes. */
  withLock<T>(fn: (held: Held) => Promise<T> | T, options?: WithLockOptions): Promise<T>;
}

/** An RLock whose every acquisition carries a fencing token (Redisson's RFencedLock). */
export interface RFencedLock extends RLock {
  /** Waits until acquired; resolves with the acquisition's fencing token. */
  lockAndGetToken(leaseTime?: number): Promise<number>;
  /** The token, or null when not acquired within waitTime (default 0: one attempt). */
  tryLockAndGetToken(waitTime?: number, leaseTime?: number): Promise<number | null>;
  /** The latest token handed out for this lock, or null when none was. */
  getToken(): Promise<number | null>;
}
