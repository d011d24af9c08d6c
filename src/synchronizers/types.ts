/** The public surface of the synchronizers: semaphores and the count-down latch (Redisson's). */

/** Options of a wait for permits. */
export interface PermitWaitOptions {
  /** Give up after this many ms (tryAcquire: 0, one attempt; -1 waits forever). */
  waitTime?: number;
  /** Aborting it ends the wait with the signal's reason, and leaves nothing taken. */
  signal?: AbortSignal;
}

/** What the callback of withPermits gets. */
export interface PermitsHeld {
  /** Aborts when the caller's signal aborts or the client closes: time to wrap up. */
  signal: AbortSignal;
}

/**
 * Redisson's RSemaphore: a count of permits at the name. Permits have no owner: any task, in any
 * process, may release them.
 */
export interface RSemaphore {
  readonly name: string;
  /** Sets the permits when none are set yet; false when they were. */
  trySetPermits(permits: number): Promise<boolean>;
  /** Adds permits (negative: takes them away, even below zero), waking waiters. */
  addPermits(permits: number): Promise<void>;
  availablePermits(): Promise<number>;
  /** Takes every available permit; returns how many. */
  drainPermits(): Promise<number>;
  /** Waits until `permits` (default 1) are taken. */
  acquire(permits?: number, options?: { signal?: AbortSignal }): Promise<void>;
  /** Without waitTime: one attempt. Otherwise waits up to waitTime ms (-1: forever). */
  tryAcquire(permits?: number, waitTime?: number): Promise<boolean>;
  tryAcquire(options: PermitWaitOptions & { permits?: number }): Promise<boolean>;
  /** Gives back `permits` (default 1). */
  release(permits?: number): Promise<void>;
  /**
   * Takes `permits`, runs fn, always gives them back (when fn throws too). Waits forever by
   * default; LockTimeoutError when waitTime passes first.
   */
  withPermits<T>(
    permits: number,
    fn: (held: PermitsHeld) => Promise<T> | T,
    options?: PermitWaitOptions,
  ): Promise<T>;
}

/**
 * Redisson's RPermitExpirableSemaphore: each permit taken has an id (32 hex characters) and may
 * have a lease; a permit whose lease runs out returns to the semaphore by itself.
 */
export interface RPermitExpirableSemaphore {
  readonly name: string;
  trySetPermits(permits: number): Promise<boolean>;
  addPermits(permits: number): Promise<void>;
  /** The permits available now (expired ones are back first). */
  availablePermits(): Promise<number>;
  /** Waits for a permit; returns its id. Without leaseTime (or -1) it never expires. */
  acquire(options?: { leaseTime?: number; signal?: AbortSignal }): Promise<string>;
  /** Like acquire, but null when waitTime (default 0: one attempt) passes first. */
  tryAcquire(options?: PermitWaitOptions & { leaseTime?: number }): Promise<string | null>;
  /** Gives the permit back; PermitNotHeldError when it is unknown or has expired. */
  release(permitId: string): Promise<void>;
  /** Gives the permit back; false when it is unknown or has expired. */
  tryRelease(permitId: string): Promise<boolean>;
  /** A new lease for a permit still out, from now (-1: never expires); false when it is not out. */
  updateLeaseTime(permitId: string, leaseTime: number): Promise<boolean>;
}

/** Redisson's RCountDownLatch: a count at the name, deleted when it reaches zero. */
export interface RCountDownLatch {
  readonly name: string;
  /** Sets the count when the latch is open (no count); false when a count is set. */
  trySetCount(count: number): Promise<boolean>;
  /** Counts down by one; at zero the latch opens and every waiter goes on. */
  countDown(): Promise<void>;
  /** The count, 0 when open. */
  getCount(): Promise<number>;
  /** Waits until the count is zero: true then, false when waitTime (default -1: forever) passes. */
  await(options?: PermitWaitOptions): Promise<boolean>;
  /** Deletes the latch (opening it); true when there was one. */
  delete(): Promise<boolean>;
}
