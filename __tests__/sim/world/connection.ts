import { AsyncLocalStorage } from 'node:async_hooks';
import { EventEmitter } from 'node:events';
import { Status, type Reply } from '../redis/commands';
import type { ServerSession, SimRedis } from '../redis/server';
import { fromBytes, toBytes } from '../redis/bytes';
import { sha1 } from '../redis/lua';
import { ReplyError } from '../redis/store';
import { Phase } from './clock';
import type { Network } from './network';
import type { SimProcess } from './process';

/**
 * An ioredis 5 `Redis` as rlock uses it, on the simulated network: the same statuses and events
 * ('connect', 'ready', 'close', 'reconnecting', 'end', 'error', 'message', 'smessage'), the same
 * reply shapes and errors, and ioredis' behaviour where it matters to a lock: commands in flight
 * when the connection drops are sent again after the reconnect (autoResendUnfulfilledCommands),
 * channels are subscribed again (autoResubscribe), commands made while it is down wait in the
 * offline queue, and every maxRetriesPerRequest + 1 failed reconnection attempts fail them all.
 */

export interface ConnectionOptions {
  keyPrefix: string;
  enableOfflineQueue: boolean;
  enableReadyCheck: boolean;
  enableAutoPipelining: boolean;
  autoResendUnfulfilledCommands: boolean;
  maxRetriesPerRequest: number | null;
  retryStrategy: (attempt: number) => number | null;
}

export const DEFAULT_OPTIONS: ConnectionOptions = {
  keyPrefix: '',
  enableOfflineQueue: true,
  enableReadyCheck: true,
  enableAutoPipelining: false,
  autoResendUnfulfilledCommands: true,
  maxRetriesPerRequest: 20,
  retryStrategy: (attempt) => Math.min(attempt * 50, 2000),
};

interface Pending {
  name: string;
  args: string[];
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** Internal (a resubscription, the ready check): nobody awaits it. */
  internal?: boolean;
}

type Arg = string | number | Buffer | Arg[];

function flatten(args: Arg[]): string[] {
  const out: string[] = [];
  for (const arg of args) {
    if (Array.isArray(arg)) out.push(...flatten(arg));
    else out.push(toBytes(typeof arg === 'string' ? arg : String(arg)));
  }
  return out;
}

class RedisReplyError extends Error {
  override name = 'ReplyError';
  constructor(
    message: string,
    readonly command: { name: string; args: string[] },
  ) {
    super(message);
  }
}

class MaxRetriesPerRequestError extends Error {
  override name = 'MaxRetriesPerRequestError';
  constructor(max: number) {
    super(
      `Reached the max retries per request limit (which is ${max}). Refer to "maxRetriesPerRequest" option for details.`,
    );
  }
}

const CLOSED = 'Connection is closed.';
const SUBSCRIBE = new Set(['subscribe', 'ssubscribe', 'unsubscribe', 'sunsubscribe']);

let sessionIds = 0;

export class SimConnection extends EventEmitter {
  status = 'connecting';
  readonly options: ConnectionOptions;
  /** Written and not answered yet, oldest first (ioredis' name: rlock checks for it). */
  readonly commandQueue: Pending[] = [];
  private offlineQueue: Pending[] = [];
  /** Not answered when the connection dropped: sent again once it is back. */
  private unfulfilled: Pending[] = [];
  private session: ServerSession | undefined;
  /** Bumped each time the socket goes: what was on the wire for an older one is lost. */
  private epoch = 0;
  private retryAttempts = 0;
  private manuallyClosing = false;
  private readonly channels = new Set<string>();
  private readonly shardChannels = new Set<string>();
  private readonly inContext = AsyncLocalStorage.snapshot();
  /** FIFO on each direction of the socket: nothing overtakes what was sent before it. */
  private lastToServer = 0;
  private lastToClient = 0;
  /** Extra ms on everything this socket delivers to its client (the fault plan's 'subscriber slowed'). */
  slowBy = 0;
  readonly id: number;

  constructor(
    readonly network: Network,
    readonly server: SimRedis,
    readonly process: SimProcess,
    readonly label: string,
    options: Partial<ConnectionOptions> = {},
  ) {
    super();
    this.options = { ...DEFAULT_OPTIONS, ...options };
    this.id = network.register(this);
    this.scheduleClient(network.latency(), () => this.attempt());
  }

  // ---- what rlock calls ------------------------------------------------------------------

  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void {
    const self = this as unknown as Record<string, unknown>;
    self[name] = (...args: Arg[]) => {
      const flat = flatten(args);
      const count = definition.numberOfKeys ?? Number(flat.shift());
      return this.evalsha(sha1(toBytes(definition.lua)), count, ...flat).catch((error: unknown) => {
        if (error instanceof Error && error.message.startsWith('NOSCRIPT')) {
          return this.eval(definition.lua, count, ...flat);
        }
        throw error;
      });
    };
  }

  evalsha(digest: string, keyCount: number, ...rest: Arg[]): Promise<unknown> {
    return this.send('evalsha', [digest, keyCount, ...rest]);
  }

  eval(text: string, keyCount: number, ...rest: Arg[]): Promise<unknown> {
    return this.send('eval', [text, keyCount, ...rest]);
  }

  exists(...keys: Arg[]): Promise<number> {
    return this.send('exists', keys) as Promise<number>;
  }
  hexists(key: string, field: string): Promise<number> {
    return this.send('hexists', [key, field]) as Promise<number>;
  }
  hget(key: string, field: string): Promise<string | null> {
    return this.send('hget', [key, field]) as Promise<string | null>;
  }
  async hgetall(key: string): Promise<Record<string, string>> {
    const flat = (await this.send('hgetall', [key])) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
    return out;
  }
  get(key: string): Promise<string | null> {
    return this.send('get', [key]) as Promise<string | null>;
  }
  pttl(key: string): Promise<number> {
    return this.send('pttl', [key]) as Promise<number>;
  }
  del(...keys: Arg[]): Promise<number> {
    return this.send('del', keys) as Promise<number>;
  }
  time(): Promise<string[]> {
    return this.send('time', []) as Promise<string[]>;
  }
  ping(): Promise<string> {
    return this.send('ping', []) as Promise<string>;
  }
  script(...args: Arg[]): Promise<unknown> {
    return this.send('script', args);
  }
  subscribe(...channels: string[]): Promise<number> {
    return this.send('subscribe', channels) as Promise<number>;
  }
  unsubscribe(...channels: string[]): Promise<number> {
    return this.send('unsubscribe', channels) as Promise<number>;
  }
  ssubscribe(...channels: string[]): Promise<number> {
    return this.send('ssubscribe', channels) as Promise<number>;
  }
  sunsubscribe(...channels: string[]): Promise<number> {
    return this.send('sunsubscribe', channels) as Promise<number>;
  }

  duplicate(override: Partial<ConnectionOptions> = {}): SimConnection {
    return new SimConnection(this.network, this.server, this.process, `${this.label}+sub`, {
      ...this.options,
      ...override,
    });
  }

  quit(): Promise<unknown> {
    if (this.status === 'end') return Promise.reject(new Error(CLOSED));
    this.manuallyClosing = true;
    return this.send('quit', []).then((reply) => {
      this.end();
      return reply;
    });
  }

  disconnect(): void {
    this.manuallyClosing = true;
    if (this.status === 'end') return;
    this.end();
  }

  // ---- the simulated socket ----------------------------------------------------------------

  private send(name: string, raw: Arg[]): Promise<unknown> {
    const args = flatten(raw);
    return new Promise((resolve, reject) => {
      const pending: Pending = { name, args, resolve, reject };
      if (this.status === 'end') return reject(new Error(CLOSED));
      // Subscribe commands go out while the connection sets itself up, as in ioredis.
      if (this.status === 'ready' || (this.status === 'connect' && SUBSCRIBE.has(name))) this.write(pending);
      else if (this.options.enableOfflineQueue) this.offlineQueue.push(pending);
      else reject(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
    });
  }

  /** Puts a command on the wire; the server runs it when it arrives, and answers on the same socket. */
  private write(pending: Pending): void {
    this.commandQueue.push(pending);
    const epoch = this.epoch;
    const session = this.session;
    const at = Math.max(this.network.clock.now + this.network.latency(), this.lastToServer);
    this.lastToServer = at;
    this.network.clock.schedule(
      at,
      Phase.Io,
      () => {
        if (epoch !== this.epoch || !session) return;
        this.network.arrive(this.server, () => this.run(pending, session, epoch));
      },
      undefined,
    );
  }

  /** The server runs a command that arrived (unless the socket went meanwhile), and answers. */
  private run(pending: Pending, session: ServerSession, epoch: number): void {
    if (epoch !== this.epoch || this.server.state === 'down') return;
    const reply = this.server.execute(session, pending.name, pending.args);
    if (this.network.tracing)
      this.network.trace(`${this.label} ${describeCommand(pending)} -> ${describeReply(reply)}`);
    if (pending.name === 'quit') this.server.disconnect(session);
    if (this.network.loseReply(this, pending.name)) {
      // The reply is lost with the socket, after the command ran.
      this.network.trace(`${this.label}: reply to ${pending.name} lost, connection dropped`);
      this.drop();
      return;
    }
    this.toClient(epoch, () => this.answer(pending, reply));
  }

  private toClient(epoch: number, deliver: () => void): void {
    const at = Math.max(this.network.clock.now + this.network.latency() + this.slowBy, this.lastToClient);
    this.lastToClient = at;
    this.scheduleAt(at, () => {
      if (epoch === this.epoch) deliver();
    });
  }

  private answer(pending: Pending, reply: Reply | ReplyError): void {
    const head = this.commandQueue.shift();
    if (head !== pending) throw new Error(`${this.label}: replies out of order`);
    if (reply instanceof ReplyError) {
      if (!pending.internal)
        pending.reject(new RedisReplyError(reply.message, { name: pending.name, args: pending.args }));
      return;
    }
    if (SUBSCRIBE.has(pending.name)) {
      const confirmations = reply as Array<[string, string, number]>;
      for (const [kind, channel] of confirmations) {
        // Kept as the server names it (bytes), as pushed messages name it.
        const set = kind === 'ssubscribe' || kind === 'sunsubscribe' ? this.shardChannels : this.channels;
        if (kind.endsWith('unsubscribe')) set.delete(channel);
        else set.add(channel);
      }
      pending.resolve(confirmations[confirmations.length - 1]?.[2] ?? 0);
      return;
    }
    pending.resolve(toValue(reply));
  }

  /** A message the server pushed on this socket (subscribe mode). */
  private pushed(kind: 'message' | 'smessage', channel: string, message: string): void {
    if (this.network.loseMessage(this, channel)) {
      this.network.trace(`${this.label}: message on ${channel} lost`);
      return;
    }
    const epoch = this.epoch;
    if (this.network.tracing) this.network.trace(`${this.label} <- ${kind} ${channel} ${message}`);
    this.toClient(epoch, () => {
      const set = kind === 'smessage' ? this.shardChannels : this.channels;
      if (set.has(channel)) this.emit(kind, fromBytes(channel), fromBytes(message));
    });
  }

  // ---- connecting, dropping, reconnecting -----------------------------------------------------

  /** A connection attempt: refused while the server is down, else connected (and ready after its check). */
  private attempt(): void {
    if (this.status === 'end') return;
    this.status = 'connecting';
    const epoch = (this.epoch += 1);
    const at = this.network.clock.now + this.network.latency();
    this.network.clock.schedule(
      at,
      Phase.Io,
      () => {
        if (epoch !== this.epoch) return;
        if (this.server.state === 'down') {
          this.scheduleClient(this.network.latency(), () => {
            if (epoch !== this.epoch) return;
            const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
            this.emit('error', refused);
            this.closed();
          });
          return;
        }
        const session = this.newSession();
        this.server.connect(session);
        this.scheduleClient(this.network.latency(), () => {
          if (epoch !== this.epoch) return;
          // The server went down (and cut this socket) while the handshake was under way.
          if (!this.server.isConnected(session)) return this.closed();
          this.session = session;
          this.lastToServer = 0;
          this.lastToClient = 0;
          this.status = 'connect';
          this.emit('connect');
          if (!this.options.enableReadyCheck) return this.ready();
          this.write({
            name: 'ping',
            args: [],
            internal: true,
            resolve: () => this.ready(),
            reject: () => undefined,
          });
        });
      },
      undefined,
    );
  }

  private newSession(): ServerSession {
    return {
      id: (sessionIds += 1),
      name: this.label,
      channels: new Set(),
      shardChannels: new Set(),
      push: (kind, channel, message) => this.pushed(kind, channel, message),
    };
  }

  private ready(): void {
    if (this.status !== 'connect') return;
    this.status = 'ready';
    this.retryAttempts = 0;
    const channels = [...this.channels];
    const shardChannels = [...this.shardChannels];
    if (channels.length > 0) this.write(internal('subscribe', channels));
    if (shardChannels.length > 0) this.write(internal('ssubscribe', shardChannels));
    const again = this.unfulfilled;
    this.unfulfilled = [];
    for (const pending of again) this.write(pending);
    const queued = this.offlineQueue;
    this.offlineQueue = [];
    for (const pending of queued) this.write(pending);
    process.nextTick(() => this.emit('ready'));
  }

  /** The socket is gone (a fault, a server restart, a reply lost): the client learns it a moment later. */
  drop(): void {
    if (this.status === 'end' || !this.session) return;
    const epoch = (this.epoch += 1);
    this.server.disconnect(this.session);
    this.session = undefined;
    this.scheduleClient(this.network.latency(), () => {
      if (epoch === this.epoch) this.closed();
    });
  }

  /** The server side of a process that died: what it had written still arrives, then the socket closes. */
  dieWithProcess(): void {
    const session = this.session;
    if (!session) return;
    this.network.clock.schedule(
      this.lastToServer + 1,
      Phase.Io,
      () => this.server.disconnect(session),
      undefined,
    );
  }

  /** ioredis' close handler: keep what was not answered for the next connection, then retry. */
  private closed(): void {
    if (this.status === 'end') return;
    this.epoch += 1;
    this.session = undefined;
    const lost = this.commandQueue.splice(0).filter((pending) => !pending.internal);
    if (this.manuallyClosing) return this.end();
    if (this.options.autoResendUnfulfilledCommands) this.unfulfilled.push(...lost);
    else for (const pending of lost) pending.reject(new Error(CLOSED));
    this.status = 'close';
    this.emit('close');
    const attempt = (this.retryAttempts += 1);
    const delay = this.options.retryStrategy(attempt);
    if (typeof delay !== 'number') return this.end();
    const max = this.options.maxRetriesPerRequest;
    if (typeof max === 'number' && (max < 0 || attempt % (max + 1) === 0)) {
      const error = new MaxRetriesPerRequestError(max);
      const failed = [...this.unfulfilled.splice(0), ...this.offlineQueue.splice(0)];
      for (const pending of failed) pending.reject(error);
    }
    this.status = 'reconnecting';
    this.emit('reconnecting', delay);
    this.scheduleClient(delay, () => this.attempt());
  }

  private end(): void {
    if (this.session) this.server.disconnect(this.session);
    this.session = undefined;
    this.epoch += 1;
    const failed = [
      ...this.commandQueue.splice(0),
      ...this.unfulfilled.splice(0),
      ...this.offlineQueue.splice(0),
    ];
    for (const pending of failed) if (!pending.internal) pending.reject(new Error(CLOSED));
    const wasEnded = this.status === 'end';
    this.status = 'end';
    if (wasEnded) return;
    process.nextTick(() => {
      this.emit('close');
      this.emit('end');
    });
  }

  /** Runs fn on this connection's process after `delay` ms, as socket I/O of that process. */
  private scheduleClient(delay: number, fn: () => void): void {
    this.scheduleAt(this.network.clock.now + delay, fn);
  }

  private scheduleAt(at: number, fn: () => void): void {
    this.network.clock.schedule(at, Phase.Io, () => this.inContext(fn), this.process);
  }

  /** ioredis emits 'error' with no listener as an unhandled error event; a simulated one only counts. */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error' && this.listenerCount('error') === 0) return false;
    return super.emit(event, ...args);
  }
}

function internal(name: string, args: string[]): Pending {
  return { name, args, internal: true, resolve: () => undefined, reject: () => undefined };
}

/** A reply as ioredis hands it over: statuses as strings, nil as null. */
function toValue(reply: Reply): unknown {
  if (reply instanceof Status) return reply.text;
  if (Array.isArray(reply)) return reply.map(toValue);
  return typeof reply === 'string' ? fromBytes(reply) : reply;
}

/** A command as the trace shows it: a script by its first comment line, not its text. */
function describeCommand(pending: Pending): string {
  const { name, args } = pending;
  if (name === 'eval' || name === 'evalsha') {
    const text = name === 'eval' ? (args[0] as string) : `${(args[0] as string).slice(0, 8)}`;
    const title = name === 'eval' ? (/\n\s*(\S[^\n]*)/.exec(text)?.[1] ?? '').slice(0, 50) : text;
    return `${name} [${title}] ${args.slice(2).join(' ')}`;
  }
  return `${name} ${args.join(' ')}`.trim();
}

function describeReply(reply: Reply | ReplyError): string {
  if (reply instanceof ReplyError) return `(error) ${reply.message.slice(0, 60)}`;
  return JSON.stringify(toValue(reply));
}
