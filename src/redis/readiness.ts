import type { RedisConnection } from './connection';

/**
 * When a command may go out on the connection, and when the connection has given up on it.
 *
 * rlock sends nothing while the connection is not ready: a call waits (within its budget) for the
 * connection's 'ready' instead of going into ioredis' offline queue. That keeps waits from piling
 * attempts into that queue during an outage (each would run when Redis is back, long after its
 * caller gave up), and makes `enableOfflineQueue: false` work on a connection that is still
 * connecting (ioredis would reject its commands at once).
 *
 * But a service that set its connection to fail fast must see rlock fail as fast as ioredis would:
 * - with `enableOfflineQueue: false`, ioredis rejects every command while it is not connected;
 *   so does rlock, from the moment a connection attempt fails (the server is unreachable) until
 *   the connection is ready again. A connection that just dropped (the server closed it: a restart
 *   of the socket, CLIENT KILL) reconnects at once: a call made then waits for that attempt;
 * - with the offline queue on, ioredis fails the commands queued there when its connection gives
 *   up: after `maxRetriesPerRequest` reconnection attempts in a row, or never (null). rlock learns
 *   when by queueing one PING there while calls wait, and fails the waiting calls with its error.
 * - a connection closed by its owner (quit(), disconnect(): status 'end') never gets ready again.
 */

/** A call waiting for the connection (a CallInFlight). */
export interface ReadyWaiter {
  /** Sends the command: the connection is ready. */
  dispatch(): void;
  /** Fails the call with what ioredis said (or would have said), as a call's error. */
  failWith(error: unknown): void;
}

/** The connection was quit or disconnected by its owner: ioredis will not reconnect it. */
export class ConnectionEnded extends Error {
  constructor() {
    super('the connection was closed with quit() or disconnect() (status end) and does not reconnect');
  }
}

/** ioredis fails commands at once while its connection is lost and its offline queue is off. */
export class OfflineQueueOff extends Error {
  constructor(status: string) {
    super(
      `the connection is ${status} and enableOfflineQueue is false: ioredis fails every command until ` +
        'it is connected again, and rlock does the same',
    );
  }
}

export class Readiness {
  private readonly waiters = new Set<ReadyWaiter>();
  /** A PING is in ioredis' offline queue, learning when the connection gives up (see probe). */
  private probing = false;
  /** Whether the connection was ready when it last closed (or is ready now). */
  private connected: boolean;
  /** A connection attempt failed since the connection was last ready: the server is unreachable. */
  private unreachable = false;

  constructor(private readonly redis: RedisConnection) {
    this.connected = this.status() === 'ready';
    // One listener of each kind for every waiting call, not one each (they can be thousands).
    redis.on('ready', () => {
      this.connected = true;
      this.unreachable = false;
      for (const call of this.takeWaiters()) call.dispatch();
    });
    redis.on('close', () => this.closed());
    redis.on('end', () => {
      for (const call of this.takeWaiters()) call.failWith(new ConnectionEnded());
    });
  }

  status(): string | undefined {
    return (this.redis as { status?: string }).status;
  }

  /**
   * Dispatches `call` at once when the connection is ready, or fails it when ioredis would have;
   * otherwise waits for 'ready' and answers true (forget() it when the call settles first).
   * `unwritable`: the socket refused the call's write, so a 'ready' status is stale (the server
   * closed the socket and ioredis has not noticed yet): the call waits for the next.
   */
  whenReady(call: ReadyWaiter, unwritable = false): boolean {
    const status = this.status();
    if (status === undefined || (status === 'ready' && !unwritable)) {
      call.dispatch();
      return false;
    }
    if (status === 'end') {
      call.failWith(new ConnectionEnded());
      return false;
    }
    if (this.unreachable && this.offlineQueueOff()) {
      call.failWith(new OfflineQueueOff(status));
      return false;
    }
    // lazyConnect: nothing connects until a command is sent, and none will be until it is ready.
    if (status === 'wait')
      (this.redis as { connect?: () => Promise<unknown> }).connect?.().catch(() => undefined);
    this.waiters.add(call);
    this.probe();
    return true;
  }

  /** `call` no longer waits (it settled, or was dispatched). */
  forget(call: ReadyWaiter): void {
    this.waiters.delete(call);
  }

  /**
   * The connection closed. After it was ready, it dropped, and ioredis reconnects at once. Else a
   * connection attempt failed: the server is unreachable, and without an offline queue ioredis
   * rejects commands from now on, until it is ready again.
   */
  private closed(): void {
    const dropped = this.connected;
    this.connected = false;
    if (dropped) return;
    this.unreachable = true;
    if (this.waiters.size === 0 || !this.offlineQueueOff()) return;
    const error = new OfflineQueueOff(this.status() ?? 'close');
    for (const call of this.takeWaiters()) call.failWith(error);
  }

  /**
   * Queues one PING in ioredis' offline queue while calls wait for 'ready': when ioredis fails it
   * (maxRetriesPerRequest reached, its connection given up, its own commandTimeout), the waiting
   * calls fail with the same error, as they would have in that queue. Resolved (the connection is
   * ready) it did what a command of the caller would have done: nothing.
   */
  private probe(): void {
    if (this.probing || this.offlineQueueOff()) return;
    const { ping } = this.redis as { ping?: () => Promise<unknown> };
    if (typeof ping !== 'function') return;
    this.probing = true;
    ping.call(this.redis).then(
      () => {
        this.probing = false;
      },
      (error: unknown) => {
        this.probing = false;
        for (const call of this.takeWaiters()) call.failWith(error);
      },
    );
  }

  private takeWaiters(): ReadyWaiter[] {
    const waiting = [...this.waiters];
    this.waiters.clear();
    return waiting;
  }

  private offlineQueueOff(): boolean {
    return (
      (this.redis as { options?: { enableOfflineQueue?: boolean } }).options?.enableOfflineQueue === false
    );
  }
}
