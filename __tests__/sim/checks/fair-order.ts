import type { Store } from '../redis/store';
import type { Disturbances } from './disturbances';
import type { Grant } from './lock-watch';

/**
 * FIFO among live fair waiters, as Redis shows it: the order in which owners joined the fair queue
 * (rlock's list of waiting owner ids). When an owner is granted while another, queued earlier,
 * still waits in the queue, and that other one later gets the lock without ever leaving the queue,
 * it was passed over; that is a violation unless a fault touched its client in between (a pause,
 * a dropped connection, a lost message: each may legitimately cost a waiter its turn or its place).
 */
interface Skipped {
  by: string;
  at: number;
  queuedAt: number;
}

export class FairOrder {
  private queuedSince = new Map<string, number>();
  /** Owners that left the queue in the command being read: a grant takes its owner out of it. */
  private departed = new Map<string, number>();
  private readonly skipped = new Map<string, Skipped[]>();
  checked = 0;

  constructor(
    private readonly name: string,
    private readonly queueKey: string,
    private readonly clientOf: (owner: string) => string,
    private readonly disturbances: Disturbances,
    private readonly fail: (message: string) => void,
  ) {}

  /** Reads the queue again (after every command that touched the lock). */
  refresh(store: Store, now: number): void {
    const data = store.peek(this.queueKey);
    const queue = data?.type === 'list' ? data.value : [];
    const next = new Map<string, number>();
    for (const owner of queue) next.set(owner, this.queuedSince.get(owner) ?? now);
    for (const [owner, since] of this.queuedSince) if (!next.has(owner)) this.departed.set(owner, since);
    this.queuedSince = next;
  }

  /** After the grants of the command were read: who left the queue without the lock starts afresh. */
  settle(): void {
    for (const owner of this.departed.keys()) this.skipped.delete(owner);
    this.departed.clear();
  }

  granted(grant: Grant): void {
    const own = this.queuedSince.get(grant.owner) ?? this.departed.get(grant.owner) ?? grant.at;
    for (const [owner, since] of this.queuedSince) {
      if (owner === grant.owner || since >= own) continue;
      // Passed over is only who is still queued once this grant is read (see settle).
      const list = this.skipped.get(owner) ?? [];
      list.push({ by: grant.owner, at: grant.at, queuedAt: since });
      this.skipped.set(owner, list);
    }
    // The owner granted now: was it passed over earlier in this same stay in the queue?
    const passed = this.skipped.get(grant.owner);
    this.skipped.delete(grant.owner);
    this.checked += 1;
    for (const skip of passed ?? []) {
      if (this.disturbances.since(this.clientOf(grant.owner), skip.queuedAt)) continue;
      this.fail(
        `${this.name}: ${skip.by} was granted at ${skip.at} ms while ${grant.owner}, queued since ` +
          `${skip.queuedAt} ms and undisturbed, waited; it got the lock only at ${grant.at} ms`,
      );
    }
  }
}
