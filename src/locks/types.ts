/** Options of `lock()`; the other option objects extend it. */
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

/** What `withLock` hands its callback while the lock is held. */
export interface Held {
  /** Aborts when the lease is lost (renewal refused or failing past expiry, lease ran out) or the caller's signal aborts. */
  signal: AbortSignal;
  /** Fencing token, for locks that issue them. */
  token?: number;
}

/**
 * A hold taken by `hold()`: given back by `release()`, or by leaving the block of an
 * `await using` declaration (TypeScript 5.2+, or a runtime with explicit resource management).
 */
export interface LockHold extends Held {
  /**
   * Releases this hold (what unlock() would give back); later calls answer the first's promise.
   * It answers as unlock() does: RedisUnavailableError when Redis did not answer in time (the
   * release goes on in the background).
   */
  release(): Promise<void>;
  /**
   * What leaving an `await using` block calls: the release, ending like withLock's. A release that
   * Redis did not answer goes on in the background (reported by the client's events) instead of
   * failing the block whose work is done; a lost lease still rejects.
   */
  [Symbol.asyncDispose](): Promise<void>;
}

export interface WithLockOptions extends LockOptions {
  /** How long to wait in ms; -1 (default) waits forever. LockTimeoutError when it passes. */
  waitTime?: number;
}

/** The public shape of every lock kind: Redisson's RLock, in milliseconds and Promises. */
export interface RLock {
  /** The name it was made with (the Redis key of its hash); a group lock lists its members' names. */
  readonly name: string;
  /** Waits until acquired. No leaseTime (or -1): the watchdog keeps the lease while held. */
  lock(leaseTime?: number): Promise<void>;
  /** Waits until acquired, or until the signal aborts. */
  lock(options: LockOptions): Promise<void>;
  /** One attempt; never waits. */
  tryLock(): Promise<boolean>;
  /** Waits up to waitTime ms (-1: forever); false when it passed without the lock. */
  tryLock(waitTime: number, leaseTime?: number): Promise<boolean>;
  /** As tryLock(waitTime, leaseTime), with a signal; waitTime 0 (one attempt) by default. */
  tryLock(options: TryLockOptions): Promise<boolean>;
  /** Releases one hold of the current owner; LockNotHeldError when it holds none. */
  unlock(): Promise<void>;
  /** Deletes the lock whoever holds it; true when a lock existed. Wakes a waiter. */
  forceUnlock(): Promise<boolean>;
  /** Whether any owner holds the lock. */
  isLocked(): Promise<boolean>;
  /** Whether the current owner (the task, or this handle outside a task) holds it. */
  isHeldByCurrentTask(): Promise<boolean>;
  /** Holds of the current owner, 0 when none. */
  getHoldCount(): Promise<number>;
  /** ms; -2 when not locked, -1 when locked without expiry. */
  remainTimeToLive(): Promise<number>;
  /** Acquires, runs fn as the owner, always releases. LockTimeoutError when waitTime passes. */
  withLock<T>(fn: (held: Held) => Promise<T> | T, options?: WithLockOptions): Promise<T>;
  /**
   * Acquires as lock() does (waitTime -1, the default, waits forever; LockTimeoutError when it
   * passes) and hands back the hold, for `await using`: it is released when the block is left.
   */
  hold(options?: WithLockOptions): Promise<LockHold>;
}

/** What a fenced lock's `withLock` hands its callback: the acquisition's fencing token is always there. */
export interface FencedHeld extends Held {
  /** This acquisition's fencing token, larger than every token handed out before it. */
  token: number;
}

/** An RLock whose every acquisition carries a fencing token (Redisson's RFencedLock). */
export interface RFencedLock extends RLock {
  /** As RLock's withLock; the callback gets this acquisition's fencing token as `held.token`. */
  withLock<T>(fn: (held: FencedHeld) => Promise<T> | T, options?: WithLockOptions): Promise<T>;
  /** Waits until acquired; resolves with the acquisition's fencing token. */
  lockAndGetToken(leaseTime?: number): Promise<number>;
  /** The token, or null when not acquired within waitTime (default 0: one attempt). */
  tryLockAndGetToken(waitTime?: number, leaseTime?: number): Promise<number | null>;
  /** The latest token handed out for this lock, or null when none was. */
  getToken(): Promise<number | null>;
  /** As RLock's hold; the hold carries this acquisition's fencing token. */
  hold(options?: WithLockOptions): Promise<LockHold & { token: number }>;
}
