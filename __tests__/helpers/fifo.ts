/**
 * Judges fair-lock order where it is decided: in Redis. `snapshots` are copies of the queue (each
 * one atomic, LRANGE), `grants` the owners in the order they got the lock. Whenever one snapshot
 * shows A ahead of B, A must have been granted before B. Returns the violations found.
 */
export function fifoViolations(snapshots: string[][], grants: string[]): string[] {
  const grantIndex = new Map(grants.map((owner, index) => [owner, index]));
  const violations = new Set<string>();
  for (const queue of snapshots) {
    let last = -1;
    let lastOwner = '';
    for (const owner of queue) {
      const index = grantIndex.get(owner);
      if (index === undefined) continue; // gave up, or still waiting when the run ended
      if (index < last) violations.add(`${owner} was granted before ${lastOwner}, who was ahead of it`);
      last = index;
      lastOwner = owner;
    }
  }
  return [...violations];
}
