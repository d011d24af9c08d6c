import { createServer, Socket, type Server } from 'node:net';

/**
 * A TCP proxy between a client and Redis that can swallow replies and reset connections: the way
 * to make a command run on the server while its reply is lost, so ioredis re-sends it.
 */
export class FaultProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private droppingReplies = false;
  /** New connections are closed as they come (a server out of reach). */
  private refusing = false;
  /** How long each reply is held back, in ms. */
  private replyDelay = 0;
  /** How long each request is held back on its way to Redis, in ms. */
  private requestDelay = 0;
  port = 0;

  constructor(private readonly targetPort: number) {
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = new Socket();
      upstream.connect(this.targetPort, '127.0.0.1');
      this.sockets.add(client).add(upstream);
      const requests = new DelayedStream(upstream);
      client.on('data', (data) => requests.push(data, this.requestDelay));
      const replies = new DelayedStream(client);
      upstream.on('data', (data) => {
        if (this.droppingReplies) return;
        replies.push(data, this.replyDelay);
      });
      const close = (): void => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    return this;
  }

  /** From now on the server's replies are thrown away. */
  dropReplies(): void {
    this.droppingReplies = true;
  }

  /** From now on every reply reaches the client `ms` late (0: at once again). */
  delayReplies(ms: number): void {
    this.replyDelay = ms;
  }

  /** From now on every command reaches Redis `ms` late (0: at once again): it runs that much later. */
  delayRequests(ms: number): void {
    this.requestDelay = ms;
  }

  /** Cuts every connection and lets replies through again for the reconnections. */
  resetConnections(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    this.droppingReplies = false;
  }

  /** Cuts every connection and, until `ms` have passed, closes every new one as it comes. */
  async outOfReachFor(ms: number): Promise<void> {
    this.refusing = true;
    this.resetConnections();
    await new Promise((resolve) => setTimeout(resolve, ms));
    this.refusing = false;
  }

  /**
   * Runs `operation` so that Redis executes its command but the reply is lost: replies are
   * dropped, then the connection is cut, and ioredis reconnects and re-sends the command.
   */
  async loseReplyOf<T>(operation: () => Promise<T>): Promise<T> {
    this.dropReplies();
    const pending = operation();
    await new Promise((resolve) => setTimeout(resolve, 100));
    this.resetConnections();
    return pending;
  }

  async stop(): Promise<void> {
    this.resetConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The data one way of a connection (its replies, or its requests), each chunk held back by the
 * delay in force when it came, and never overtaking an earlier one: a TCP stream keeps its order,
 * and ioredis matches replies to commands by it. (Lowering the delay must not let a new chunk pass
 * chunks still held back.)
 */
class DelayedStream {
  private readonly queue: Array<{ data: Buffer; at: number }> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly socket: Socket) {
    // What is still held back goes nowhere once the connection is gone; its timer must not keep
    // the test's process alive (a minute's delay would hold Jest's worker past the run).
    socket.once('close', () => {
      clearTimeout(this.timer);
      this.queue.length = 0;
    });
  }

  push(data: Buffer, delay: number): void {
    if (delay <= 0 && this.queue.length === 0) {
      this.socket.write(data);
      return;
    }
    this.queue.push({ data, at: performance.now() + delay });
    this.pump();
  }

  private pump(): void {
    clearTimeout(this.timer);
    const now = performance.now();
    while (this.queue.length > 0 && (this.queue[0] as { at: number }).at <= now) {
      const { data } = this.queue.shift() as { data: Buffer };
      if (this.socket.writable) this.socket.write(data);
    }
    const next = this.queue[0];
    if (next) this.timer = setTimeout(() => this.pump(), Math.max(0, next.at - now));
  }
}
