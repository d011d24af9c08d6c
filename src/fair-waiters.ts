import { ClientClosedError } from './errors';
import type { FairLockKeys } from './keys';

/**
 * This client's waiters on fair locks. A release hands the lock to the head of the queue and
 * publishes `granted\n<owner>\n<lock>` on the lock's hand-off channel (`recheck\n...` asks a
 * waiter to look again); this registry routes it to the one waiter it names, if it is this
 * client's. The watchdog keeps every queued waiter's place alive through `places()`.
 */
export type FairWake = 'granted' | 'recheck' | 'timeout';

export interface FairWaiter {
  readonly name: string;
  readonly ownerId: string;
  readonly keys: FairLockKeys;
  /** Set once the waiter is in the Redis queue; only then is its place refreshed. */
  queued: boolean;
  sleep(ms: number, signal?: AbortSignal): Promise<FairWake>;
  release(): void;
}

class Waiter implements FairWaiter {
  queued = false;
  /** Settles when the waiter is released, for the same owner's next wait on this lock. */
  readonly done: Promise<void>;
  private settleDone!: () => void;
  /** A wake-up that came while the waiter was not asleep (between attempts). */
  private pending?: Exclude<FairWake, 'timeout'>;
  private wakeSleeper?: (wake: FairWake) => void;
  private failSleeper?: (error: unknown) => void;

  constructor(
    readonly name: string,
    readonly ownerId: string,
    readonly keys: FairLockKeys,
    private readonly onRelease: (waiter: Waiter) => void,
  ) {
    this.done = new Promise((resolve) => (this.settleDone = resolve));
  }

  sleep(ms: number, signal?: AbortSignal): Promise<FairWake> {
    signal?.throwIfAborted();
    if (this.pending) {
      const wake = this.pending;
      this.pending = undefined;
      return Promise.resolve(wake);
    }
    return new Promise<FairWake>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.wakeSleeper = undefined;
        this.failSleeper = undefined;
      };
      const onAbort = (): void => {
        finish();
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        finish();
        resolve('timeout');
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.wakeSleeper = (wake) => {
        finish();
        resolve(wake);
      };
      this.failSleeper = (error) => {
        finish();
        reject(error);
      };
    });
  }

  wake(wake: Exclude<FairWake, 'timeout'>): void {
    if (this.wakeSleeper) this.wakeSleeper(wake);
    // A grant outranks a re-check request: keep the stronger news.
    else if (this.pending !== 'granted') this.pending = wake;
  }

  fail(error: unknown): void {
    this.failSleeper?.(error);
  }

  release(): void {
    this.onRelease(this);
    this.settleDone();
  }
}

export class FairWaiters {
  private readonly waiters = new Map<string, Waiter>();

  /**
   * @param keyPrefix the connection's ioredis keyPrefix: a message names the lock by its key as the
   *                  script saw it, prefixed.
   */
  constructor(private readonly keyPrefix = '') {}

  /**
   * Registers the waiter of `ownerId` on lock `name`. An owner waits on one fair lock once at a
   * time (it has one place in the queue): a second wait of it starts when the first one ends.
   */
  async register(name: string, ownerId: string, keys: FairLockKeys): Promise<FairWaiter> {
    const key = waiterKey(name, ownerId);
    for (let earlier = this.waiters.get(key); earlier; earlier = this.waiters.get(key)) {
      await earlier.done;
    }
    const waiter = new Waiter(name, ownerId, keys, (done) => {
      if (this.waiters.get(key) === done) this.waiters.delete(key);
    });
    this.waiters.set(key, waiter);
    return waiter;
  }

  markQueued(name: string, ownerId: string): void {
    const waiter = this.waiters.get(waiterKey(name, ownerId));
    if (waiter) waiter.queued = true;
  }

  /** A message on a hand-off channel. */
  onHandoffMessage(message: string): void {
    const [kind, ownerId, ...rest] = message.split('\n');
    if ((kind !== 'granted' && kind !== 'recheck') || ownerId === undefined) return;
    const key = rest.join('\n');
    if (!key.startsWith(this.keyPrefix)) return;
    this.waiters.get(waiterKey(key.slice(this.keyPrefix.length), ownerId))?.wake(kind);
  }

  /** Every waiter tries again: after a reconnect, or when its place turned out to be gone. */
  recheckAll(): void {
    for (const waiter of this.waiters.values()) waiter.wake('recheck');
  }

  recheck(waiter: FairWaiter): void {
    (waiter as Waiter).wake('recheck');
  }

  /** The waiters whose places live in Redis now. */
  places(): FairWaiter[] {
    return [...this.waiters.values()].filter((waiter) => waiter.queued);
  }

  close(): void {
    for (const waiter of [...this.waiters.values()]) {
      waiter.fail(new ClientClosedError());
      waiter.release();
    }
  }
}

function waiterKey(name: string, ownerId: string): string {
  return `${ownerId}\u0000${name}`;
}
