import { fairLockKeys, fencingTokenKey } from '../library';
import type { SimRedis } from '../redis/server';
import type { World } from '../world/world';
import { Disturbances } from './disturbances';
import { FairOrder } from './fair-order';
import type { Ledger } from './ledger';
import { LockWatch } from './lock-watch';
import { TokenOrder } from './tokens';

/**
 * Every check that runs while the world runs: after each command on a server (what Redis holds),
 * and after each step (what the tasks believe, who waits, which calls are late).
 */
export type WatchedKind = 'lock' | 'fair' | 'fenced' | 'spin' | 'rw';

export interface WakeBounds {
  /** How long a live waiter may wait while the lock is free, when no fault touched anyone lately. */
  calm: number;
  /** The same after a fault (a lost message, a paused holder, a dropped subscriber): the lease and more. */
  disturbed: number;
  /** How far back a fault still excuses a slow wake-up. */
  lookBack: number;
}

export class Watchers {
  readonly disturbances = new Disturbances();
  private readonly locks: Array<{
    watch: LockWatch;
    fair?: FairOrder;
    tokens?: TokenOrder;
    bounds: WakeBounds;
  }> = [];
  private wakeChecks = 0;

  get figures(): { wakeChecks: number; fifoChecks: number; tokens: number } {
    let fifoChecks = 0;
    let tokens = 0;
    for (const entry of this.locks) {
      fifoChecks += entry.fair?.checked ?? 0;
      tokens += entry.tokens?.issued ?? 0;
    }
    return { wakeChecks: this.wakeChecks, fifoChecks, tokens };
  }

  constructor(
    private readonly world: World,
    private readonly ledger: Ledger,
  ) {
    world.servers.forEach((server, index) => this.observe(server, index));
    world.afterStep.push(() => this.afterStep());
  }

  private clientIds(): string[] {
    return this.world.clients.map(({ client }) => client.id);
  }

  /** The client (its process name) an owner id belongs to. */
  clientOf(owner: string): string {
    const found = this.world.clients.find(({ client }) => owner.startsWith(`${client.id}:`));
    return found?.process.name ?? '?';
  }

  watch(name: string, kind: WatchedKind, bounds: WakeBounds, server = 0): void {
    const fail = (message: string): void => this.world.fail(message);
    const watch = new LockWatch(server, name, kind === 'rw', () => this.clientIds(), fail, this.world.now);
    const entry: (typeof this.locks)[number] = { watch, bounds };
    if (kind === 'fair') {
      const fair = new FairOrder(
        name,
        fairLockKeys(name).queue,
        (owner) => this.clientOf(owner),
        this.disturbances,
        fail,
      );
      entry.fair = fair;
      watch.onGrant = (grant) => fair.granted(grant);
    }
    if (kind === 'fenced')
      entry.tokens = new TokenOrder(name, fencingTokenKey(name), fail, () => this.world.dataLosses);
    this.locks.push(entry);
  }

  private observe(server: SimRedis, index: number): void {
    server.observers.push({
      keyRemoved: (_server, key, why) => {
        for (const { watch } of this.locks)
          if (watch.server === index && watch.name === key) watch.pendingRemoval = why;
      },
      afterCommand: (_server, command) => {
        const touched = command.script?.keys ?? command.args;
        for (const entry of this.locks) {
          if (entry.watch.server !== index) continue;
          entry.tokens?.afterCommand(command);
          if (!touched.includes(entry.watch.name) && !command.script) continue;
          entry.fair?.refresh(server.store, this.world.now);
          entry.watch.refresh(server.store, this.world.now, command);
          entry.fair?.settle();
        }
      },
    });
  }

  private afterStep(): void {
    const now = this.world.now;
    for (const entry of this.locks) {
      const server = this.world.servers[entry.watch.server] as SimRedis;
      entry.watch.refresh(server.store, now);
      this.checkWakeUp(entry.watch, entry.bounds, now);
    }
    this.checkBeliefs();
    for (const call of this.ledger.overdue()) {
      this.world.fail(
        `${call.process.name}: ${call.what} still out after ${now - call.since} ms (budget ${call.budget} ms)`,
      );
      this.ledger.calls.delete(call);
    }
  }

  /** No lost wake-up: a live waiter does not wait on a free lock longer than the bound. */
  private checkWakeUp(watch: LockWatch, bounds: WakeBounds, now: number): void {
    if (watch.freeSince === undefined) return;
    for (const wait of this.ledger.waits) {
      if (wait.resource !== watch.name || wait.process.state !== 'running') continue;
      const from = Math.max(wait.since, watch.freeSince);
      const waited = now - from - wait.process.pausedWithin(from, now);
      const calm = !this.disturbances.anySince(from - bounds.lookBack);
      const bound = calm ? bounds.calm : bounds.disturbed;
      this.wakeChecks += 1;
      if (waited > bound) {
        this.world.fail(
          `${wait.process.name} waits on ${watch.name}, free since ${watch.freeSince} ms, for ${waited} ms ` +
            `(bound ${bound} ms${calm ? ', no fault since' : ''}): a lost wake-up`,
        );
        this.ledger.waits.delete(wait);
      }
    }
  }

  /**
   * At most one holder whose lease is valid: two bodies of running processes, neither told that its
   * lease is lost, whose holds did not lapse (a hold taken away by someone else's script still
   * counts: its owner was promised it). A body that began after its owner's hold had ended (a
   * stale hand-off message, a grant answered for a hold that is gone) holds nothing Redis knows
   * of: it counts too, as 'none', until it is told.
   */
  private checkBeliefs(): void {
    type Held = typeof this.ledger.beliefs extends Set<infer B> ? B : never;
    const byResource = new Map<string, Held[]>();
    const fates = new Map<Held, string>();
    for (const belief of this.ledger.beliefs) {
      if (belief.mode === 'permits' || belief.process.state !== 'running' || belief.told()) continue;
      // Without an owner id to look up in Redis (a group lock), a holder stopped while it held may
      // have lost its lease unknowingly (docs: it learns when it runs again): not counted.
      if (belief.ownerId === undefined && belief.process.pausedWithin(belief.since, this.world.now) > 0)
        continue;
      const watch = this.locks.find((entry) => entry.watch.name === belief.resource)?.watch;
      // A writer's events name its field (`<owner>:write`); the watch knows the owner.
      const owner = belief.ownerId?.replace(/:write$/, '');
      const fate = owner === undefined ? 'held' : (watch?.fates.get(owner) ?? 'held');
      const endedAt = owner === undefined ? undefined : watch?.endedAt.get(owner);
      const startedWithout = endedAt !== undefined && endedAt < belief.since;
      if ((fate === 'lapsed' || fate === 'released') && !startedWithout) continue;
      const list = byResource.get(belief.resource) ?? [];
      fates.set(belief, startedWithout ? 'none' : fate);
      list.push(belief);
      byResource.set(belief.resource, list);
    }
    for (const [resource, beliefs] of byResource) {
      const writers = beliefs.filter((belief) => belief.mode !== 'read');
      const owners = new Set(beliefs.map((belief) => belief.ownerId ?? belief.process.name));
      const writerOwners = new Set(writers.map((belief) => belief.ownerId ?? belief.process.name));
      if (writerOwners.size === 0 || (writerOwners.size === 1 && owners.size === 1)) continue;
      const who = beliefs.map(
        (belief) =>
          `${belief.process.name}(${belief.ownerId ?? '?'}, ${belief.mode}, ${fates.get(belief) ?? '?'})`,
      );
      this.world.fail(`${resource}: held at once by ${who.join(' and ')}`);
      for (const belief of beliefs) this.ledger.beliefs.delete(belief);
    }
  }
}
