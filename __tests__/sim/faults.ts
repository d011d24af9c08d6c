import type { Watchers } from './checks/watchers';
import type { Random } from './random';
import { CALM } from './world/network';
import type { SimClient, World } from './world/world';

/**
 * The fault plan of one seed: at random moments of the fault phase, one of the faults the issue
 * names, and bursts of network trouble (replies lost with their connection, messages lost, slow
 * packets). Each fault is noted as a disturbance of the clients it touches, and counted.
 */
export type FaultKind =
  | 'connection dropped'
  | 'reply lost'
  | 'subscriber dropped'
  | 'client paused'
  | 'client killed'
  | 'server restarted, data kept'
  | 'server restarted, data lost'
  | 'server paused'
  | 'script flush'
  | 'network burst';

export interface FaultOptions {
  /** Faults this scenario may not have (a restart that loses data breaks RedLock's majority by design). */
  exclude: FaultKind[];
  /** Replaces a killed client, so that contention goes on. */
  respawn(dead: SimClient): void;
  /** The longest lease of the scenario: pauses reach past it. */
  lease: number;
}

export const ALL_FAULTS: FaultKind[] = [
  'connection dropped',
  'reply lost',
  'subscriber dropped',
  'client paused',
  'client killed',
  'server restarted, data kept',
  'server restarted, data lost',
  'server paused',
  'script flush',
  'network burst',
];

export class FaultPlan {
  readonly counts = new Map<FaultKind, number>();

  constructor(
    private readonly world: World,
    private readonly watchers: Watchers,
    private readonly random: Random,
    private readonly options: FaultOptions,
  ) {}

  /** Schedules `n` faults between `from` and `to` (virtual ms). */
  plan(n: number, from: number, to: number): void {
    const kinds = ALL_FAULTS.filter((kind) => !this.options.exclude.includes(kind));
    for (let i = 0; i < n; i += 1) {
      const kind = this.random.pick(kinds);
      const at = this.random.int(from, to);
      this.world.at(at, () => this.inject(kind, to), undefined);
    }
  }

  private names(clients: SimClient[]): string[] {
    return clients.map(({ process }) => process.name);
  }

  private live(): SimClient[] {
    return this.world.clients.filter(({ process }) => process.state !== 'dead');
  }

  private note(kind: FaultKind, detail: string, touched: SimClient[]): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    this.watchers.disturbances.noteAll(this.names(touched), this.world.now);
    this.world.trace(`FAULT ${kind}: ${detail}`);
  }

  private inject(kind: FaultKind, end: number): void {
    const { world, random } = this;
    const clients = this.live();
    const victim = clients.length > 0 ? random.pick(clients) : undefined;
    const serverIndex = random.int(0, world.servers.length - 1);
    const server = world.servers[serverIndex];
    if (!server) return;
    const onServer = world.clients.filter((client) => client.server === serverIndex);
    const later = (ms: number, fn: () => void): void => world.at(Math.min(world.now + ms, end), fn);
    switch (kind) {
      case 'connection dropped': {
        if (!victim || victim.process.state !== 'running') return;
        victim.connection.drop();
        return this.note(kind, victim.process.name, [victim]);
      }
      case 'reply lost': {
        // The next command to run on the victim's connection loses its reply with the socket,
        // after it ran: ioredis sends it again once reconnected.
        if (!victim) return;
        world.network.armed.add(victim.connection);
        return this.note(kind, victim.process.name, [victim]);
      }
      case 'subscriber dropped': {
        if (!victim) return;
        const subscriber = world.network
          .all()
          .find((c) => c.process === victim.process && c !== victim.connection);
        if (!subscriber) return;
        subscriber.drop();
        return this.note(kind, victim.process.name, [victim]);
      }
      case 'client paused': {
        if (!victim || victim.process.state !== 'running') return;
        const ms = random.int(100, Math.round(this.options.lease * 1.5));
        victim.process.pause();
        this.note(kind, `${victim.process.name} for ${ms} ms`, [victim]);
        later(ms, () => {
          victim.process.resume();
          world.clock.release(victim.process);
          this.watchers.disturbances.note(victim.process.name, world.now);
          world.trace(`${victim.process.name} resumed`);
        });
        return;
      }
      case 'client killed': {
        if (!victim || clients.length < 2) return;
        victim.process.kill();
        world.clock.drop(victim.process);
        for (const connection of world.network.all()) {
          if (connection.process === victim.process) connection.dieWithProcess();
        }
        this.note(kind, victim.process.name, world.clients);
        this.options.respawn(victim);
        return;
      }
      case 'server restarted, data kept':
      case 'server restarted, data lost': {
        if (server.state !== 'up') return;
        const ms = random.int(50, 1500);
        world.network.serverDown(server);
        server.restart(kind === 'server restarted, data kept');
        if (kind === 'server restarted, data lost') {
          world.dataLost = true;
          world.dataLosses += 1;
        }
        this.note(kind, `${server.name} down for ${ms} ms`, onServer);
        later(ms, () => {
          server.state = 'up';
          this.watchers.disturbances.noteAll(this.names(onServer), world.now);
          world.trace(`${server.name} up again`);
        });
        return;
      }
      case 'server paused': {
        if (server.state !== 'up') return;
        const ms = random.int(100, 2000);
        server.state = 'paused';
        this.note(kind, `${server.name} for ${ms} ms`, onServer);
        later(ms, () => {
          world.network.resumeServer(server);
          this.watchers.disturbances.noteAll(this.names(onServer), world.now);
          world.trace(`${server.name} resumed`);
        });
        return;
      }
      case 'script flush': {
        server.flushScripts();
        return this.note(kind, server.name, []);
      }
      case 'network burst': {
        const ms = random.int(100, 1500);
        world.network.faults = {
          replyLoss: random.chance(0.5) ? random.float() * 0.15 : 0,
          messageLoss: random.chance(0.6) ? random.float() * 0.5 : 0,
          slow: random.chance(0.5) ? random.float() * 0.3 : 0,
        };
        this.note(kind, `${ms} ms: ${JSON.stringify(world.network.faults)}`, world.clients);
        later(ms, () => {
          world.network.faults = CALM;
          this.watchers.disturbances.noteAll(this.names(world.clients), world.now);
        });
        return;
      }
    }
  }
}
