import { onAbort } from './abort';
import { ClientClosedError } from './errors';
import type { FairLockKeys } from './keys';

/**
 * This client's waiters on fair locks. A release hands the lock to the head of the queue and
 * publishes `granted\n<owner>\n<lock>` on the lock's hand-off channel (`recheck\n...` asks a
 * waiter to look again); this registry routes it to the waiter it names, if it is this client's.
 * The watchdog keeps every queued waiter's place alive through `places()`.
 *
 * An owner has one place in a queue, so the waits of one owner on one lock (two calls through one
 * handle at once) share one waiter: a grant goes to one of them, and the others look again — and
 * re-enter, being the same owner.
 */
export type FairWake = 'granted' | 'recheck' | 'timeout';

export interface FairWaiter {
  readonly name: string;
  readonly ownerId: string;
  readonly keys: FairLockKeys;
  /** Set once the waiter is in the Redis queue; only then is its place refreshed. */
  queued: boolean;
}

/** One wait's hold on its owner's waiter. */
export interface FairWait {
  sleep(ms: number, signal?: AbortSignal): Promise<FairWake>;
  release(): void;
}

interface Sleeper {
  wake(wake: FairWake): void;
  fail(error: unknown): void;
}

class Waiter implements FairWaiter {
  queued = false;
  /** Waits sharing this waiter. */
  refs = 0;
  private readonly sleepers: Sleeper[] = [];
  /** A wake-up that came while nobody slept (between attempts). */
  private pending?: Exclude<FairWake, 'timeout'>;

  constructor(
    readonly name: string,
    readonly ownerId: string,
    readonly keys: FairLockKeys,
  ) {}

  sleep(ms: number, signal?: AbortSignal): Promise<FairWake> {
    signal?.throwIfAborted();
    if (this.pending) {
      const wake = this.pending;
      // A grant is taken by one wait; the others only look again.
      this.pending = wake === 'granted' && this.refs > 1 ? 'recheck' : undefined;
      return Promise.resolve(wake);
    }
    return new Promise<FairWake>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        stopListening?.();
        const index = this.sleepers.indexOf(sleeper);
        if (index >= 0) this.sleepers.splice(index, 1);
      };
      const sleeper: Sleeper = {
        wake: (wake) => {
          finish();
          resolve(wake);
        },
        fail: (error) => {
          finish();
          reject(error);
        },
      };
      const timer = setTimeout(() => sleeper.wake('timeout'), ms);
      const stopListening = signal && onAbort(signal, () => sleeper.fail(signal.reason));
      this.sleepers.push(sleeper);
    });
  }

  wake(wake: Exclude<FairWake, 'timeout'>): void {
    const [first, ...others] = this.sleepers;
    if (!first) {
      // A grant outranks a re-check request: keep the stronger news.
      if (this.pending !== 'granted') this.pending = wake;
      return;
    }
    first.wake(wake);
    for (const other of others) other.wake('recheck');
  }

  fail(error: unknown): void {
    for (const sleeper of [...this.sleepers]) sleeper.fail(error);
  }
}

export class FairWaiters {
  private readonly waiters = new Map<string, Waiter>();

  /**
   * @param keyPrefix the connection's ioredis keyPrefix: a message names the lock by its key as the
   *                  script saw it, prefixed.
   */
  constructor(private readonly keyPrefix = '') {}

  /** Registers a wait of `ownerId` on lock `name` (joining the owner's waiter there, if any). */
  register(name: string, ownerId: string, keys: FairLockKeys): FairWait {
    const key = waiterKey(name, ownerId);
    let waiter = this.waiters.get(key);
    if (!waiter) {
      waiter = new Waiter(name, ownerId, keys);
      this.waiters.set(key, waiter);
    }
    const own = waiter;
    own.refs += 1;
    let released = false;
    return {
      sleep: (ms, signal) => own.sleep(ms, signal),
      release: () => {
        if (released) return;
        released = true;
        own.refs -= 1;
        if (own.refs === 0 && this.waiters.get(key) === own) this.waiters.delete(key);
      },
    };
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
    for (const waiter of this.waiters.values()) waiter.fail(new ClientClosedError());
    this.waiters.clear();
  }
}

function waiterKey(name: string, ownerId: string): string {
  return `${ownerId}\u0000${name}`;
}
