/**
 * The locks this client saw contended a moment ago: a wait of one of its owners began or ended
 * there within CONTENDED_FOR_MS. A new acquisition of such a lock most likely finds it held, so it
 * listens and queues (or registers as a waiter) with its first attempt, instead of first making an
 * attempt that cannot wait and costs a round trip and a script for nothing.
 */

/** How long after a wait began or ended a lock counts as contended. */
const CONTENDED_FOR_MS = 1_000;
/** How many locks a client remembers; the oldest go first. */
const REMEMBERED = 1_024;

export class RecentContention {
  /** Lock name -> when a wait there last began or ended (performance.now()). */
  private readonly seen = new Map<string, number>();

  /** A wait on lock `name` begins or ends. */
  note(name: string): void {
    this.seen.delete(name);
    if (this.seen.size >= REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
    this.seen.set(name, performance.now());
  }

  recent(name: string): boolean {
    const at = this.seen.get(name);
    return at !== undefined && performance.now() - at < CONTENDED_FOR_MS;
  }

  clear(): void {
    this.seen.clear();
  }
}
