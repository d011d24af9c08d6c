import type { Subscriber, Subscription } from './pubsub';

/**
 * The one acquire loop every lock kind shares:
 *   attempt -> subscribe -> attempt again -> sleep(min(holder ttl, time left)) -> attempt ...
 *
 * The second attempt, made once the subscription is confirmed, catches a release that happened
 * between the first attempt and the SUBSCRIBE. Sleeping never outlasts the holder's ttl, so a
 * holder that dies without releasing costs a waiter no more than its remaining lease.
 */
export interface AcquirePlan {
  /** One attempt: null when acquired, else the holder's remaining ttl in ms (-1: no expiry). */
  attempt(): Promise<number | null>;
  /** Gives back a grant that arrived after the caller stopped waiting (abort, close). */
  undoGrant(): Promise<unknown>;
  /** The channel on which the holder's release is announced. */
  channel: string;
  /** -1 waits forever, 0 makes one attempt. */
  waitTime: number;
  /** Aborts the wait: the caller's signal combined with the client's close. */
  signal?: AbortSignal;
  subscriber(): Subscriber;
  /** Longest single sleep when no ttl bounds it (holder without expiry, waiting forever). */
  maxSleep: number;
}

export async function acquireOrWait(plan: AcquirePlan): Promise<boolean> {
  const { signal } = plan;
  const deadline = plan.waitTime < 0 ? Infinity : performance.now() + plan.waitTime;
  const timeLeft = (): number => deadline - performance.now();
  const guard = new Guard(plan);

  if ((await guard.attempt()) === null) return true;
  if (plan.waitTime === 0) return false;

  const subscription = await guard.subscribe(timeLeft());
  if (!subscription) return false;
  try {
    for (;;) {
      const ttl = await guard.attempt();
      if (ttl === null) return true;
      const left = timeLeft();
      if (left <= 0) return false;
      const bound = ttl >= 0 ? Math.min(ttl, left) : left;
      await subscription.sleep(Math.max(1, Math.min(bound, plan.maxSleep)), signal);
      guard.check();
    }
  } finally {
    subscription.release();
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
  }

  async attempt(): Promise<number | null> {
    this.check();
    const pending = this.plan.attempt();
    const ttl = await this.race(pending, (late) => {
      if (late === null) void this.plan.undoGrant().catch(() => undefined);
    });
    if (ttl === null && this.plan.signal?.aborted) {
      await this.plan.undoGrant().catch(() => undefined);
      this.check();
    }
    return ttl;
  }

  /** Resolves undefined when the time left runs out before the subscription is confirmed. */
  async subscribe(timeLeft: number): Promise<Subscription | undefined> {
    this.check();
    const pending = this.plan.subscriber().subscribe(this.plan.channel);
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
      // Given up (time out, abort) before the subscription came: give it back when it comes.
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
