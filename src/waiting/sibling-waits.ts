import { ownerLockKey } from '../ownership/owner';
import type { WakeSource } from './acquire-or-wait';

/**
 * The waits of one owner on one lock that are asleep together, in this client.
 *
 * A release wakes one waiter of the process (Redisson's rule: one can take the lock). When that
 * waiter's owner has other waits on the lock (two `lock()` calls through one handle, not awaited
 * one by one), those can re-enter the moment it holds the lock, but nothing would wake them: they
 * would sleep until the ttl they last saw, the previous holder's lease (30 s with the watchdog).
 * So a wait that takes the lock wakes its siblings, and only them.
 */
export class SiblingWaits {
  private readonly waits = new Map<string, Set<SiblingWait>>();

  /** A wait of `owner` on lock `name` begins; leave() it when it ends. */
  join(name: string, owner: string): SiblingWait {
    const key = ownerLockKey(owner, name);
    let waits = this.waits.get(key);
    if (!waits) this.waits.set(key, (waits = new Set()));
    const wait = new SiblingWait(key);
    waits.add(wait);
    return wait;
  }

  /** Whether a wait of `owner` on lock `name` is under way. */
  waiting(name: string, owner: string): boolean {
    return this.waits.has(ownerLockKey(owner, name));
  }

  /** The wait ended; with `took`, it holds the lock and its siblings look again at once. */
  leave(wait: SiblingWait, took: boolean): void {
    const waits = this.waits.get(wait.key);
    if (!waits?.delete(wait)) return;
    if (waits.size === 0) this.waits.delete(wait.key);
    else if (took) for (const sibling of waits) sibling.wake();
  }

  /**
   * The wait ends without the lock: true when it was its owner's last wait on the lock, which gives
   * up the owner's place in the queue. An owner has one place and one hand-off, so while another of
   * its waits remains, that one keeps them, and looks again at once: a grant may have come to this one.
   */
  leaveWithout(wait: SiblingWait): boolean {
    const waits = this.waits.get(wait.key);
    const last = waits?.size === 1 && waits.has(wait);
    if (waits?.delete(wait)) for (const sibling of waits) sibling.wake();
    if (last) this.waits.delete(wait.key);
    return last;
  }
}

export class SiblingWait {
  /** Where the wait sleeps, once it does. */
  private source?: WakeSource;
  /** A wake-up that came while the wait was not asleep: its next sleep ends at once. */
  private woken = false;

  constructor(readonly key: string) {}

  wake(): void {
    if (!this.source?.interrupt()) this.woken = true;
  }

  /**
   * `source`, whose sleeps this wait's siblings can also end (the wait then looks again). Nothing
   * is made per sleep: most waits never have a sibling, and a sleep is on every contended path.
   */
  wrap(source: WakeSource): WakeSource {
    this.source = source;
    return {
      sleep: (ms, signal) => {
        if (!this.woken) return source.sleep(ms, signal);
        this.woken = false;
        return Promise.resolve('message');
      },
      interrupt: () => source.interrupt(),
      release: () => source.release(),
    };
  }
}
