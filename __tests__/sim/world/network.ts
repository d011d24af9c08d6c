import type { Random } from '../random';
import type { SimRedis } from '../redis/server';
import type { VirtualClock } from './clock';
import type { SimConnection } from './connection';

/**
 * The simulated network between clients and servers: how late each packet is (the seed decides,
 * per packet; each socket stays in order, sockets overtake each other freely), which replies and
 * messages the fault plan loses, and a paused server's backlog.
 */
export interface NetworkFaults {
  /** Chance that a reply is lost with its socket, after the command ran. */
  replyLoss: number;
  /** Chance that a pub/sub message is lost. */
  messageLoss: number;
  /** Chance that a packet is slow (tens to hundreds of ms). */
  slow: number;
}

export const CALM: NetworkFaults = { replyLoss: 0, messageLoss: 0, slow: 0 };

export class Network {
  faults: NetworkFaults = CALM;
  private readonly connections: SimConnection[] = [];
  /** Commands that reached a stopped server, in arrival order, run when it resumes. */
  private readonly backlog = new Map<SimRedis, Array<() => void>>();
  readonly counts = { repliesLost: 0, messagesLost: 0 };

  /** Whether commands and messages go to the trace (a replay of one seed). */
  tracing = false;

  constructor(
    readonly clock: VirtualClock,
    private readonly random: Random,
    readonly trace: (line: string) => void,
  ) {}

  register(connection: SimConnection): number {
    this.connections.push(connection);
    return this.connections.length;
  }

  all(): readonly SimConnection[] {
    return this.connections;
  }

  /** One packet's delay in ms: mostly under 2, sometimes tens, rarely hundreds (while faults are on). */
  latency(): number {
    const r = this.random.float();
    if (r < this.faults.slow) return this.random.int(20, 400);
    if (r < 0.1) return this.random.int(2, 15);
    return this.random.int(0, 2);
  }

  /** Connections whose next reply is lost with the socket (the fault plan's 'reply lost'). */
  readonly armed = new Set<SimConnection>();

  loseReply(connection: SimConnection, command: string): boolean {
    if (command === 'quit') return false;
    const armed = this.armed.delete(connection);
    if (!armed && !this.random.chance(this.faults.replyLoss)) return false;
    this.counts.repliesLost += 1;
    void connection;
    return true;
  }

  loseMessage(connection: SimConnection, channel: string): boolean {
    if (!this.random.chance(this.faults.messageLoss)) return false;
    this.counts.messagesLost += 1;
    void connection;
    void channel;
    return true;
  }

  /** A command reached `server`: it runs now, or when a stopped server resumes. */
  arrive(server: SimRedis, run: () => void): void {
    if (server.state === 'paused') {
      const waiting = this.backlog.get(server) ?? [];
      waiting.push(run);
      this.backlog.set(server, waiting);
      return;
    }
    run();
  }

  /** A stopped server resumes: what reached its sockets meanwhile runs, in order. */
  resumeServer(server: SimRedis): void {
    server.state = 'up';
    const waiting = this.backlog.get(server) ?? [];
    this.backlog.delete(server);
    // Run here, in order: a command that arrives in this same ms must not overtake them.
    for (const run of waiting) run();
  }

  /** A restart: every socket to it goes, and what waited in them. */
  serverDown(server: SimRedis): void {
    server.state = 'down';
    this.backlog.delete(server);
    for (const connection of this.connections) if (connection.server === server) connection.drop();
    server.dropSessions();
  }
}
