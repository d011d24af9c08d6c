import { LockClient, type LockClientOptions } from '../library';
import { Random } from '../random';
import { SimRedis } from '../redis/server';
import { Phase, VirtualClock } from './clock';
import { SimConnection, type ConnectionOptions } from './connection';
import { activate, EPOCH_MS, realTimers } from './globals';
import { Network } from './network';
import { SimProcess } from './process';

/**
 * The whole simulated world of one seed: a virtual clock, the network, the Redis servers and the
 * client processes, each a LockClient on its own connection. run() drives it one event at a time
 * and lets the promises of each event settle before the next, so that the order of everything is
 * the seed's.
 */

export interface SimClient {
  process: SimProcess;
  client: LockClient;
  connection: SimConnection;
  /** Which server it talks to (its index in world.servers). */
  server: number;
}

export class World {
  readonly clock = new VirtualClock(0);
  readonly random: Random;
  readonly network: Network;
  readonly servers: SimRedis[] = [];
  readonly clients: SimClient[] = [];
  readonly traceLines: string[] = [];
  /** Failures: an invariant broken, an exception nobody caught. */
  readonly failures: string[] = [];
  /** Checks run after every event. */
  readonly afterStep: Array<() => void> = [];
  traceEnabled = false;
  /** A server restarted without its data: counters Redisson keeps for good (permits) are gone. */
  dataLost = false;
  /** How many times a server restarted without its data so far. */
  dataLosses = 0;
  private deactivate: (() => void) | undefined;

  constructor(readonly seed: number) {
    this.random = new Random(seed);
    this.network = new Network(this.clock, this.random.fork(1), (line) => this.trace(line));
  }

  /** Virtual ms since the world started. */
  get now(): number {
    return this.clock.now;
  }

  trace(line: string): void {
    if (this.traceEnabled) this.traceLines.push(`${String(this.now).padStart(7)} ms  ${line}`);
  }

  fail(message: string): void {
    if (this.failures.length < 20) this.failures.push(`at ${this.now} ms: ${message}`);
    this.trace(`FAILED: ${message}`);
  }

  addServer(name: string): SimRedis {
    const server = new SimRedis(name, () => (EPOCH_MS + this.clock.now) * 1000);
    this.servers.push(server);
    return server;
  }

  /** Starts a client process on server `index`: its connection and its LockClient. */
  addClient(
    name: string,
    options: LockClientOptions,
    connectionOptions: Partial<ConnectionOptions> = {},
    index = 0,
    inProcess?: SimProcess,
  ): SimClient {
    const process = inProcess ?? new SimProcess(name, () => this.clock.now, this.clock.now);
    const server = this.servers[index] as SimRedis;
    const { connection, client } = process.run(() => {
      const label = inProcess ? `${name}@${server.name}` : name;
      const connection = new SimConnection(this.network, server, process, label, connectionOptions);
      return {
        connection,
        client: new LockClient(connection, { clientId: label.replace(/\W/g, '-'), ...options }),
      };
    });
    const entry = { process, client, connection, server: index };
    this.clients.push(entry);
    return entry;
  }

  /** Runs fn at virtual time `at` (from now: `in` ms), outside any process: the fault plan's moves. */
  at(when: number, fn: () => void, label?: string): void {
    this.clock.schedule(when, Phase.Timer, fn, undefined, label);
  }

  /** Starts the world's clock and chance behind the globals; stop() gives them back. */
  start(): void {
    this.deactivate = activate({ clock: this.clock, random: this.random.fork(2) });
  }

  stop(): void {
    this.deactivate?.();
    this.deactivate = undefined;
  }

  /**
   * Runs events until virtual time `until` (or `done()` says so), draining the microtasks after
   * each. Returns how many events ran.
   */
  async run(until: number, done?: () => boolean): Promise<number> {
    let steps = 0;
    for (;;) {
      if (done?.() || this.failures.length > 0) return steps;
      const event = this.clock.next(until);
      if (!event) {
        this.clock.now = Math.max(this.clock.now, until);
        return steps;
      }
      steps += 1;
      if (event.label !== undefined) this.trace(event.label);
      try {
        event.run();
      } catch (error) {
        this.fail(`uncaught exception in ${event.process?.name ?? 'the world'}: ${describe(error)}`);
      }
      await drain();
      for (const check of this.afterStep) check();
    }
  }
}

/** Lets every promise reaction and nextTick of the event run: the real event loop's next turn. */
function drain(): Promise<void> {
  return new Promise((resolve) => realTimers.setImmediate(resolve));
}

export function describe(error: unknown): string {
  if (error instanceof Error)
    return `${error.name}: ${error.message}${error.stack ? `\n${error.stack}` : ''}`;
  return String(error);
}
