import type { ExecutedCommand } from '../redis/server';
import type { Store } from '../redis/store';

/**
 * One lock as Redis holds it, in Redisson's layout (a hash at the name: field owner id -> hold
 * count; a writer's field `<owner>:write`, and `mode` for a read-write lock; rlock's marks begin
 * with `rlock_`). After every command that touches it, and after every step (keys expire between
 * commands), the watch reads the hash again and learns who was granted and how each hold ended:
 * released by its owner's own script, lapsed (expired, or lost with the data), or taken away by
 * a script of someone else (stolen: never right).
 */
export type HoldFate = 'held' | 'released' | 'lapsed' | 'stolen';

export interface Grant {
  owner: string;
  at: number;
}

export class LockWatch {
  /** Owner -> hold count, as of the last reading. */
  owners = new Map<string, number>();
  writers = new Set<string>();
  readonly fates = new Map<string, HoldFate>();
  /** When each owner's last hold ended (released, lapsed, stolen); gone while it holds again. */
  readonly endedAt = new Map<string, number>();
  /** Since when no owner holds it (undefined: held). */
  freeSince: number | undefined;
  /** A removal of the key inside the command being read (why it went). */
  pendingRemoval: 'expired' | 'deleted' | 'flushed' | undefined;
  readonly grants: Grant[] = [];
  onGrant: ((grant: Grant) => void) | undefined;

  constructor(
    readonly server: number,
    readonly name: string,
    readonly readWrite: boolean,
    private readonly clientIds: () => string[],
    private readonly fail: (message: string) => void,
    start: number,
  ) {
    this.freeSince = start;
  }

  /** Reads the hash again: after `command`, or (none) after time passed. */
  refresh(store: Store, now: number, command?: ExecutedCommand): void {
    const data = store.peek(this.name);
    const removal = this.pendingRemoval;
    this.pendingRemoval = undefined;
    const owners = new Map<string, number>();
    const writers = new Set<string>();
    if (data?.type === 'hash') {
      const ids = this.clientIds();
      for (const [field, value] of data.value) {
        if (field === 'mode' || field.startsWith('rlock_')) continue;
        if (!ids.some((id) => field.startsWith(`${id}:`))) continue;
        const write = field.endsWith(':write');
        const owner = write ? field.slice(0, -':write'.length) : field;
        if (write) writers.add(owner);
        else owners.set(owner, Number(value));
      }
      for (const owner of writers) if (!owners.has(owner)) owners.set(owner, 0);
    }
    for (const owner of this.owners.keys()) {
      if (owners.has(owner)) continue;
      this.fates.set(owner, this.fateOf(owner, removal, command));
      this.endedAt.set(owner, now);
    }
    for (const owner of owners.keys()) {
      if (this.owners.has(owner)) continue;
      this.fates.set(owner, 'held');
      this.endedAt.delete(owner);
      const grant = { owner, at: now };
      this.grants.push(grant);
      if (this.grants.length > 200) this.grants.shift();
      this.onGrant?.(grant);
    }
    this.owners = owners;
    this.writers = writers;
    if (owners.size === 0) this.freeSince ??= now;
    else this.freeSince = undefined;
    this.checkExclusive(command);
  }

  private fateOf(owner: string, removal: LockWatch['pendingRemoval'], command?: ExecutedCommand): HoldFate {
    if (!command || removal === 'expired' || removal === 'flushed') return 'lapsed';
    const args = command.script?.args ?? [];
    if (args.includes(owner) || args.includes(`${owner}:write`)) return 'released';
    // A reader's hold ends by its own timeout key, which any later script of the name cleans up.
    if (this.readWrite && !this.writers.has(owner)) return 'lapsed';
    return 'stolen';
  }

  private checkExclusive(command?: ExecutedCommand): void {
    const after = command ? ` after ${command.name} by ${command.session.name}` : '';
    if (!this.readWrite) {
      if (this.owners.size > 1) this.fail(`${this.name}: ${this.owners.size} owners hold it at once${after}`);
      return;
    }
    if (this.writers.size > 1) this.fail(`${this.name}: ${this.writers.size} writers at once${after}`);
    const [writer] = this.writers;
    if (writer !== undefined && [...this.owners.keys()].some((owner) => owner !== writer)) {
      this.fail(`${this.name}: a writer beside readers of others${after}`);
    }
  }
}
