import { EventEmitter } from 'node:events';
import type Redis from 'ioredis';
import { fromBytes, toBytes } from '../redis/bytes';
import { Status, type Reply } from '../redis/commands';
import type { ServerSession, SimRedis } from '../redis/server';
import { sha1 } from '../redis/lua';
import { ReplyError } from '../redis/store';
import { realKey, simKey, type KeyState } from './snapshot';

/**
 * A connection for a LockClient that sends every command to a real redis-server and, once it has
 * answered, runs the same command on a simulated Redis whose clock is the real one: the library's
 * own command sequences, through the real scripts, on both. It answers with the real server's
 * reply, and records every difference between the two replies and between the two keyspaces after
 * each command. Commands go one at a time, so that both run them in the same order.
 */
export interface Difference {
  command: string;
  what: string;
  real: unknown;
  sim: unknown;
}

/** Numbers that differ only by the moment each server read its clock (ttls, clock-derived tokens). */
function closeEnough(real: number, sim: number): boolean {
  const tolerance = Math.abs(real) > 1e14 ? 200_000 : 200;
  return Math.abs(real - sim) <= tolerance;
}

/** Texts equal but for the clock readings in them (a fenced hold's mark 'a:<token>', a latch's 'r1'). */
function sameText(real: string, sim: string): boolean {
  const a = real.split(/(-?\d+)/);
  const b = sim.split(/(-?\d+)/);
  return (
    a.length === b.length &&
    a.every((part, i) => (i % 2 === 1 ? closeEnough(Number(part), Number(b[i])) : part === b[i]))
  );
}

function same(real: unknown, sim: unknown): boolean {
  if (typeof real === 'number' && typeof sim === 'number') return closeEnough(real, sim);
  if (typeof real === 'string' && typeof sim === 'string') return sameText(real, sim);
  if (Array.isArray(real) && Array.isArray(sim)) {
    return real.length === sim.length && real.every((item, i) => same(item, sim[i]));
  }
  return real === sim;
}

/** TIME: both clocks, read a moment apart. */
function sameTime(real: unknown, sim: unknown): boolean {
  const micros = (reply: unknown): number =>
    Array.isArray(reply) ? Number(reply[0]) * 1e6 + Number(reply[1]) : Number.NaN;
  return Math.abs(micros(real) - micros(sim)) <= 200_000;
}

function simValue(reply: Reply | ReplyError): unknown {
  if (reply instanceof ReplyError) return { error: fromBytes(reply.message) };
  if (reply instanceof Status) return reply.text;
  if (Array.isArray(reply)) return reply.map(simValue);
  return typeof reply === 'string' ? fromBytes(reply) : reply;
}

function sameState(real: KeyState, sim: KeyState): boolean {
  if (real.type !== sim.type) {
    // A key at the very end of its ttl on one side and gone on the other: the same moment, read twice.
    const expiring = (state: KeyState): boolean => state.ttl >= 0 && state.ttl <= 200;
    return (real.type === 'none' && expiring(sim)) || (sim.type === 'none' && expiring(real));
  }
  if (real.ttl < 0 || sim.ttl < 0 ? real.ttl !== sim.ttl : !closeEnough(real.ttl, sim.ttl)) return false;
  return sameText(real.value, sim.value);
}

type Arg = string | number | Arg[];

/** Now, in microseconds since the epoch, as the real server's TIME reads it on this machine. */
function nowMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/**
 * The clock of the simulated server of a tee: the real clock, except that while the tee runs a
 * command there it reads the moment the same command was sent to the real server. Both servers
 * then decide by one moment (a ttl under a threshold, a deadline passed): the simulated one runs
 * after the real one answered, later by however long this process took to read the answer.
 */
export class TeeClock {
  private frozen?: number;
  readonly micros = (): number => this.frozen ?? nowMicros();

  at<T>(micros: number, run: () => T): T {
    this.frozen = micros;
    try {
      return run();
    } finally {
      this.frozen = undefined;
    }
  }
}

function flatten(args: Arg[]): string[] {
  return args.flatMap((arg) => (Array.isArray(arg) ? flatten(arg) : [String(arg)]));
}

export class TeeConnection extends EventEmitter {
  /** ioredis' name; its presence sends the library's scripts as plain EVALSHA (as on ioredis). */
  readonly commandQueue: unknown[] = [];
  readonly options = { keyPrefix: '' };
  readonly differences: Difference[] = [];
  readonly counts = { commands: 0, states: 0 };
  /** Script digests that ran, for the coverage figures. */
  readonly scripts = new Set<string>();
  /** How many times each script digest ran: a workload waits on a step it needs to have happened. */
  readonly scriptRuns = new Map<string, number>();
  private chain: Promise<unknown> = Promise.resolve();
  private readonly session: ServerSession;
  /** The next command goes to both servers twice (a copy, as a re-send after a lost reply). */
  copyNext = 0;
  /** The next command goes out this many ms late (its caller gives up on it first). */
  delayNext = 0;

  constructor(
    private readonly real: Redis,
    private readonly admin: Redis,
    readonly sim: SimRedis,
    private readonly clock?: TeeClock,
  ) {
    super();
    this.session = {
      id: 0,
      name: 'tee',
      channels: new Set(),
      shardChannels: new Set(),
      push: () => undefined,
    };
    sim.connect(this.session);
    for (const event of ['ready', 'close', 'end', 'error', 'reconnecting', 'connect']) {
      real.on(event, (...args: unknown[]) => this.emit(event, ...args));
    }
  }

  get status(): string {
    return this.real.status;
  }

  defineCommand(): void {
    throw new Error('the tee sends scripts as EVALSHA, as the library does on ioredis');
  }

  duplicate(): Redis {
    // Pub/sub runs on the real server; the simulated one keeps a session with the same channels,
    // so that a PUBLISH counts the same receivers on both (a release drops a waiter nobody hears).
    const real = this.real.duplicate({ enableReadyCheck: false, enableAutoPipelining: false });
    const shadow: ServerSession = {
      id: -1,
      name: 'tee-subscriber',
      channels: new Set(),
      shardChannels: new Set(),
      push: () => undefined,
    };
    this.sim.connect(shadow);
    const mirror = (command: 'subscribe' | 'unsubscribe' | 'ssubscribe' | 'sunsubscribe'): void => {
      const set =
        command === 'ssubscribe' || command === 'sunsubscribe' ? shadow.shardChannels : shadow.channels;
      const original = (real[command] as (...channels: string[]) => Promise<unknown>).bind(real);
      (real as unknown as Record<string, unknown>)[command] = async (...channels: string[]) => {
        const reply = await original(...channels);
        for (const channel of channels) {
          if (command.includes('unsubscribe')) set.delete(channel);
          else set.add(channel);
        }
        return reply;
      };
    };
    for (const command of ['subscribe', 'unsubscribe', 'ssubscribe', 'sunsubscribe'] as const)
      mirror(command);
    real.on('end', () => this.sim.disconnect(shadow));
    return real;
  }

  evalsha(sha: string, keyCount: number, ...rest: Arg[]): Promise<unknown> {
    return this.send('evalsha', [sha, String(keyCount), ...flatten(rest)]);
  }
  eval(text: string, keyCount: number, ...rest: Arg[]): Promise<unknown> {
    return this.send('eval', [text, String(keyCount), ...flatten(rest)]);
  }
  exists(...keys: string[]): Promise<unknown> {
    return this.send('exists', keys);
  }
  hexists(key: string, field: string): Promise<unknown> {
    return this.send('hexists', [key, field]);
  }
  hget(key: string, field: string): Promise<unknown> {
    return this.send('hget', [key, field]);
  }
  async hgetall(key: string): Promise<Record<string, string>> {
    const flat = (await this.send('hgetall', [key])) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
    return out;
  }
  get(key: string): Promise<unknown> {
    return this.send('get', [key]);
  }
  pttl(key: string): Promise<unknown> {
    return this.send('pttl', [key]);
  }
  del(...keys: string[]): Promise<unknown> {
    return this.send('del', keys);
  }
  time(): Promise<unknown> {
    return this.send('time', []);
  }
  ping(): Promise<unknown> {
    return this.send('ping', []);
  }
  subscribe(): Promise<unknown> {
    throw new Error('pub/sub goes to the duplicate');
  }
  unsubscribe(): Promise<unknown> {
    throw new Error('pub/sub goes to the duplicate');
  }
  quit(): Promise<unknown> {
    return this.real.quit();
  }
  disconnect(): void {
    this.real.disconnect();
  }

  /** SCRIPT FLUSH on both: the next script call meets NOSCRIPT on both. */
  async flushScripts(): Promise<void> {
    await this.send('script', ['flush']);
  }

  /** Runs `name` on both, one command at a time; answers what the real server answered. */
  private send(name: string, args: string[]): Promise<unknown> {
    const job = this.chain.then(async () => {
      const copies = 1 + this.copyNext;
      this.copyNext = 0;
      const delay = this.delayNext;
      this.delayNext = 0;
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      let answer: { value?: unknown; error?: Error } = {};
      for (let copy = 0; copy < copies; copy += 1) {
        const outcome = await this.both(name, args);
        if (copy === 0) answer = outcome;
      }
      if (answer.error) throw answer.error;
      return answer.value;
    });
    this.chain = job.catch(() => undefined);
    return job;
  }

  private async both(name: string, args: string[]): Promise<{ value?: unknown; error?: Error }> {
    let real: { value?: unknown; error?: Error };
    const sentAt = nowMicros();
    try {
      real = { value: await this.real.call(name, ...args) };
    } catch (error) {
      // The library reads a failed EVALSHA's arguments back from the error, as ioredis attaches them.
      real = { error: Object.assign(error as Error, { command: { name, args } }) };
    }
    const run = (): Reply | ReplyError => this.sim.execute(this.session, name, args.map(toBytes));
    const simReply = this.clock ? this.clock.at(sentAt, run) : run();
    this.counts.commands += 1;
    const label = describe(name, args);
    const realShown = real.error ? { error: real.error.message } : real.value;
    const simShown = simValue(simReply);
    const agree =
      name === 'time'
        ? sameTime(real.value, simShown)
        : real.error
          ? simReply instanceof ReplyError && fromBytes(simReply.message) === real.error.message
          : !(simReply instanceof ReplyError) && same(real.value, simShown);
    if (!agree) this.differences.push({ command: label, what: 'reply', real: realShown, sim: simShown });
    if (name === 'evalsha' || name === 'eval') {
      if (!(simReply instanceof ReplyError && simReply.message.startsWith('NOSCRIPT'))) {
        const digest = name === 'evalsha' ? (args[0] as string) : sha1(toBytes(args[0] as string));
        this.scripts.add(digest);
        this.scriptRuns.set(digest, (this.scriptRuns.get(digest) ?? 0) + 1);
      }
      await this.compareKeyspace(label);
    }
    return real;
  }

  /** Both keyspaces, key by key: type, value, ttl. */
  private async compareKeyspace(label: string): Promise<void> {
    const keys = new Set([...(await this.admin.keys('*')), ...this.sim.store.allKeys().map(fromBytes)]);
    for (const key of keys) {
      const [real, sim] = [await realKey(this.admin, key), simKey(this.sim, key)];
      this.counts.states += 1;
      if (!sameState(real, sim)) this.differences.push({ command: label, what: `key ${key}`, real, sim });
    }
  }
}

function describe(name: string, args: string[]): string {
  if (name === 'eval') return `eval ${(/\n\s*(\S[^\n]*)/.exec(args[0] as string)?.[1] ?? '').slice(0, 60)}`;
  return `${name} ${args.slice(0, 6).join(' ')}`.slice(0, 160);
}
