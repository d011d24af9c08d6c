import type { Watchers } from './checks/watchers';
import { Random } from './random';
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
  | 'network burst'
  | 'subscriber slowed';

export interface FaultOptions {
  /** Faults this scenario may not have (a restart that loses data breaks RedLock's majority by design). */
  exclude: FaultKind[];
  /** Replaces a killed client, so that contention goes on. */
  respawn(dead: SimClient): void;
  /** The longest lease of the scenario: pauses reach past it. */
  lease: number;
}

/**
 * The faults drawn from the plan's own generator, in this order: a seed planned before another
 * kind was added keeps its schedule (see SLOWED_SUBSCRIBERS).
 */
type DrawnFault = Exclude<FaultKind, 'subscriber slowed'>;

const DRAWN_FAULTS: DrawnFault[] = [
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

export const ALL_FAULTS: FaultKind[] = [...DRAWN_FAULTS, 'subscriber slowed'];

/**
 * Subscribers slowed are planned from a generator of their own, made from the seed alone: no draw
 * of the rest of the world moves, and a seed that excludes them replays the schedule it had
 * before they existed (see __tests__/simulation-regressions.test.ts).
 */
const SLOWED_SUBSCRIBERS_SALT = 0x5eed51;
export class FaultPlan {
  readonly counts = new Map<FaultKind, number>();

  constructor(
    private readonly world: World,
    private readonly watchers: Watchers,
    private readonly random: Random,
    private readonly options: FaultOptions,
  ) {}

  /**
   * Schedules `n` faults between `from` and `to` (virtual ms), and up to three subscribers slowed
   * (from a generator of their own, see SLOWED_SUBSCRIBERS_SALT) unless the scenario excludes them.
   */
  plan(n: number, from: number, to: number, seed: number): void {
    const kinds = DRAWN_FAULTS.filter((kind) => !this.options.exclude.includes(kind));
    for (let i = 0; i < n; i += 1) {
      const kind = this.random.pick(kinds);
      const at = this.random.int(from, to);
      this.world.at(at, () => this.inject(kind, to), undefined);
    }
    if (this.options.exclude.includes('subscriber slowed')) return;
    const own = new Random((seed ^ SLOWED_SUBSCRIBERS_SALT) >>> 0);
    for (let i = own.int(0, 3); i > 0; i -= 1) {
      const at = own.int(from, to);
      const victim = own.float();
      const slowBy = own.int(5, 300);
      const ms = own.int(100, 2000);
      // Moments, within the period, at which the victim's command connection drops.
      const drops = Array.from({ length: own.int(0, 4) }, () => own.int(0, ms));
      this.world.at(at, () => this.slowSubscriber(victim, slowBy, ms, drops, to), undefined);
    }
  }

  /**
   * One client's subscriber connections deliver every message `slowBy` ms late for `ms`, while its
   * command connection answers as fast as ever: a hand-off's message comes after the answers of
   * attempts sent later (a busy or throttled subscriber socket, a proxy in the way). Nothing is
   * lost; each socket stays in order. The command connection may drop meanwhile, `drops` ms into
   * the period: a reconnect makes every waiter of the client look again, while messages for it
   * are still on their way. `victim` in [0, 1) picks among the live clients.
   */
  private slowSubscriber(victim: number, slowBy: number, ms: number, drops: number[], end: number): void {
    const clients = this.live();
    const client = clients[Math.floor(victim * clients.length)];
    if (!client) return;
    // Its subscriber connections only: a client of several servers keeps a command connection to
    // each, and those answer as fast as ever.
    const commands = new Set(this.world.clients.map((sim) => sim.connection));
    const subscribers = this.world.network
      .all()
      .filter((c) => c.process === client.process && !commands.has(c));
    for (const subscriber of subscribers) subscriber.slowBy = slowBy;
    this.note(
      'subscriber slowed',
      `${client.process.name} by ${slowBy} ms for ${ms} ms, its connection dropped ${drops.length} times`,
      [client],
    );
    for (const after of drops) {
      this.world.at(
        Math.min(this.world.now + after, end),
        () => {
          if (client.process.state === 'running') client.connection.drop();
        },
        undefined,
      );
    }
    this.world.at(
      Math.min(this.world.now + ms, end),
      () => {
        for (const subscriber of subscribers) subscriber.slowBy = 0;
        this.watchers.disturbances.note(client.process.name, this.world.now);
      },
      undefined,
    );
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

  private inject(kind: DrawnFault, end: number): void {
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
