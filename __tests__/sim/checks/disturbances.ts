/**
 * When each client was last disturbed by a fault (paused, a connection dropped, a reply or message
 * lost, its server restarted or stopped), so that the checks with tight bounds (FIFO among live
 * waiters, prompt wake-ups) judge only what no fault excuses.
 */
export class Disturbances {
  private readonly last = new Map<string, number>();
  private lastAny = -Infinity;

  note(client: string, at: number): void {
    this.last.set(client, at);
    this.lastAny = at;
  }

  noteAll(clients: Iterable<string>, at: number): void {
    for (const client of clients) this.note(client, at);
  }

  /** Whether `client` was disturbed at or after `since`. */
  since(client: string, since: number): boolean {
    return (this.last.get(client) ?? -Infinity) >= since;
  }

  anySince(since: number): boolean {
    return this.lastAny >= since;
  }
}
