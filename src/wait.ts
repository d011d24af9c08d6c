/**
 * The one acquire loop every lock kind shares:
 *   attempt -> open a wake source -> attempt again -> sleep(min(holder ttl, time left)) -> attempt ...
 *
 * The wake source is where "try again now" comes from: the lock's release channel for the
 * reentrant lock, the client's own channel for the fair lock (whose releases hand the lock straight
 * to the next waiter). Opened after the first failed attempt, it is followed by a second attempt
 * that catches a release in between; a kind that must be listening before it joins a queue opens
 * it first. Sleeping never outlasts the holder's ttl, so a holder that dies without releasing costs
 * a waiter no more than its remaining lease.
 */

/** 'try': one attempt, never queue; 'first': the first attempt of a wait; 'queued': a later one. */
export type AttemptKind = 'try' | 'first' | 'queued';

export type WakeReason = 'message' | 'recheck' | 'timeout' | 'granted';

export interface WakeSource {
  /** Sleeps until a wake-up or `ms` passes; 'granted' means a release handed this waiter the lock. */
  sleep(ms: number, signal?: AbortSignal): Promise<WakeReason>;
  release(): void;
}

export interface AcquirePlan {
  /** One attempt: null when acquired, else the holder's remaining ttl in ms (-1: no expiry). */
  attempt(kind: AttemptKind): Promise<number | null>;
  /** Gives back a grant that arrived after the caller stopped waiting (abort, close). */
  undoGrant(): Promise<unknown>;
  openWakeSource(): Promise<WakeSource>;
  /** Open the wake source before the first attempt (a queued waiter must never miss its turn). */
  wakeSourceFirst: boolean;
  /** Called when a wait that may have queued ends without the lock (leave the queue). */
  giveUp?(): Promise<unknown>;
  /** -1 waits forever, 0 makes one attempt. */
  waitTime: number;
  /** The caller's signal: aborting it answers at once. */
  signal?: AbortSignal;
  /**
   * The client's close. Only read, never listened to (thousands of waits would each add a listener):
   * sleeping waiters are woken with ClientClosedError by the close itself, and a wait that is
   * between steps stops at its next step.
   */
  closing: AbortSignal;
  /** Longest single sleep when no ttl bounds it (holder without expiry, waiting forever). */
  maxSleep: number;
}

/** How a wait ended: by an attempt of its own, by a hand-off from a release, or not at all. */
export type AcquireOutcome = 'attempt' | 'handoff' | false;

export async function acquireOrWait(plan: AcquirePlan): Promise<AcquireOutcome> {
  const deadline = plan.waitTime < 0 ? Infinity : performance.now() + plan.waitTime;
  const timeLeft = (): number => deadline - performance.now();
  const guard = new Guard(plan);

  if (plan.waitTime === 0) return (await guard.attempt('try')) === null ? 'attempt' : false;

  let source: WakeSource | undefined;
  let outcome: AcquireOutcome = false;
  try {
    if (plan.wakeSourceFirst) {
      source = await guard.open(timeLeft());
      if (!source) return false;
    }
    let ttl = await guard.attempt('first');
    if (!source && ttl !== null) {
      source = await guard.open(timeLeft());
      if (!source) return false;
      ttl = await guard.attempt('queued');
    }
    while (ttl !== null) {
      const left = timeLeft();
      if (left <= 0) return false;
      const bound = ttl >= 0 ? Math.min(ttl, left) : left;
      const wake = await (source as WakeSource).sleep(
        Math.max(1, Math.min(bound, plan.maxSleep)),
        plan.signal,
      );
      guard.check();
      if (wake === 'granted') return (outcome = 'handoff');
      ttl = await guard.attempt('queued');
    }
    return (outcome = 'attempt');
  } finally {
    source?.release();
    if (!outcome && plan.giveUp) {
      const leaving = plan.giveUp().catch(() => undefined);
      // A wait that timed out leaves the queue before tryLock answers; an aborted one answers at once.
      if (!plan.signal?.aborted && !plan.closing.aborted) await leaving;
    }
  }
}

/**
 * Runs the loop's Redis calls so that an abort (or the client's close) answers at once, while the
 * call in flight is left to finish and cleaned up after (a late grant is given back).
 */
class Guard {
  constructor(private readonly plan: AcquirePlan) {}

  check(): void {
    this.plan.signal?.throwIfAborted();
    this.plan.closing.throwIfAborted();
  }

  async attempt(kind: AttemptKind): Promise<number | null> {
    this.check();
    const pending = this.plan.attempt(kind);
    const ttl = await this.race(pending, (late) => {
      if (late === null) void this.plan.undoGrant().catch(() => undefined);
    });
    if (ttl === null && (this.plan.signal?.aborted || this.plan.closing.aborted)) {
      await this.plan.undoGrant().catch(() => undefined);
      this.check();
    }
    return ttl;
  }

  /** Resolves undefined when the time left runs out before the wake source is ready. */
  async open(timeLeft: number): Promise<WakeSource | undefined> {
    this.check();
    const pending = this.plan.openWakeSource();
    let taken = false;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<undefined>((resolve) => {
      if (Number.isFinite(timeLeft)) timer = setTimeout(resolve, Math.max(0, timeLeft), undefined);
    });
    try {
      const result = await this.race(Promise.race([pending, expired]), () => undefined);
      taken = result !== undefined;
      return result;
    } finally {
      clearTimeout(timer);
      // Given up (time out, abort) before the source was ready: give it back when it is.
      if (!taken)
        pending.then(
          (late) => late.release(),
          () => undefined,
        );
    }
  }

  /** Settles with `work`, or rejects as soon as the signal aborts; `onLate` sees a late result. */
  private race<T>(work: Promise<T>, onLate: (late: T) => void): Promise<T> {
    const { signal } = this.plan;
    if (!signal) return work;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const onAbort = (): void => {
        settled = true;
        work.then(onLate, () => undefined);
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(
        (value) => {
          signal.removeEventListener('abort', onAbort);
          if (!settled) resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          if (!settled) reject(error);
        },
      );
    });
  }
}
