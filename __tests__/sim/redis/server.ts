import { runCommand, Status, type CommandContext, type Reply } from './commands';
import { compileScript, runScript, sha1 } from './lua';
import { ReplyError, Store, type Removal, type Value } from './store';

/**
 * One simulated Redis server: the keyspace, the script cache (EVAL, EVALSHA and NOSCRIPT, SCRIPT
 * LOAD / FLUSH / EXISTS), pub/sub (classic and sharded) and the server's life: up, stopped with its
 * sockets open (SIGSTOP: commands wait), or down (restarting, with or without its data).
 * Commands run one at a time, each script atomically, as in Redis.
 */

/** A client connection as the server sees it. */
export interface ServerSession {
  readonly id: number;
  readonly name: string;
  /** Sends a pushed message to the client (subscribe mode). */
  push(kind: 'message' | 'smessage', channel: string, message: string): void;
  channels: Set<string>;
  shardChannels: Set<string>;
}

/** One command as it ran, for the checks and the trace. */
export interface ExecutedCommand {
  session: ServerSession;
  name: string;
  args: string[];
  /** For EVAL / EVALSHA that ran: the script's text (as sent), its keys and arguments. */
  script?: { text: string; keys: string[]; args: string[] };
  reply: Reply | ReplyError;
  /** Server ms when it ran. */
  at: number;
}

export interface ServerObserver {
  beforeCommand?(server: SimRedis, session: ServerSession, name: string, args: string[]): void;
  afterCommand?(server: SimRedis, command: ExecutedCommand): void;
  keyRemoved?(server: SimRedis, key: string, why: Removal, data: Value): void;
}

export type ServerState = 'up' | 'paused' | 'down';

const SUBSCRIBER_ONLY = new Set(['subscribe', 'unsubscribe', 'ssubscribe', 'sunsubscribe', 'ping', 'quit']);

export class SimRedis {
  readonly store: Store;
  state: ServerState = 'up';
  /** Scripts by digest: what EVALSHA can run. */
  private scripts = new Map<string, string>();
  private readonly sessions = new Set<ServerSession>();
  readonly observers: ServerObserver[] = [];
  /** The deliberate bug under test, if any: the text a script is run as (see mutants.ts). */
  scriptText: (text: string) => string = (text) => text;
  /** Counts, for the figures. */
  readonly counts = { commands: 0, scripts: 0, noscript: 0, published: 0 };

  constructor(
    readonly name: string,
    /** The server's clock in microseconds since the epoch. */
    private readonly micros: () => number,
  ) {
    this.store = new Store(
      () => Math.floor(micros() / 1000),
      (key, why, data) => {
        for (const observer of this.observers) observer.keyRemoved?.(this, key, why, data);
      },
    );
  }

  nowMs(): number {
    return Math.floor(this.micros() / 1000);
  }

  connect(session: ServerSession): void {
    this.sessions.add(session);
  }

  isConnected(session: ServerSession): boolean {
    return this.sessions.has(session);
  }

  disconnect(session: ServerSession): void {
    this.sessions.delete(session);
    session.channels.clear();
    session.shardChannels.clear();
  }

  /** Every session is cut (a restart, or the network dropping them all); the caller tells the clients. */
  dropSessions(): ServerSession[] {
    const dropped = [...this.sessions];
    for (const session of dropped) this.disconnect(session);
    return dropped;
  }

  /** A restart: scripts are gone; the data too unless it was persisted. */
  restart(keepData: boolean): void {
    this.scripts = new Map();
    if (!keepData) this.store.flush('flushed');
  }

  flushScripts(): void {
    this.scripts = new Map();
  }

  execute(session: ServerSession, rawName: string, args: string[]): Reply | ReplyError {
    const name = rawName.toLowerCase();
    for (const observer of this.observers) observer.beforeCommand?.(this, session, name, args);
    this.counts.commands += 1;
    let script: ExecutedCommand['script'];
    let reply: Reply | ReplyError;
    try {
      const inSubscriberMode = session.channels.size + session.shardChannels.size > 0;
      if (inSubscriberMode && !SUBSCRIBER_ONLY.has(name)) {
        throw new ReplyError(
          `ERR Can't execute '${name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context`,
        );
      }
      if (name === 'eval' || name === 'evalsha') {
        const ran = this.evaluate(name, args);
        script = ran.script;
        reply = ran.reply;
      } else if (name === 'script') reply = this.scriptCommand(args);
      else if (name === 'subscribe' || name === 'ssubscribe') reply = this.subscribe(session, name, args);
      else if (name === 'unsubscribe' || name === 'sunsubscribe')
        reply = this.unsubscribe(session, name, args);
      else if (name === 'quit') reply = new Status('OK');
      else reply = runCommand(this.context(), name, args);
    } catch (error) {
      if (!(error instanceof ReplyError)) throw error;
      reply = error;
    }
    const executed: ExecutedCommand = { session, name, args, script, reply, at: this.nowMs() };
    for (const observer of this.observers) observer.afterCommand?.(this, executed);
    return reply;
  }

  private context(): CommandContext {
    return {
      store: this.store,
      micros: this.micros,
      publish: (channel, message, sharded) => this.publish(channel, message, sharded),
    };
  }

  private evaluate(
    name: string,
    args: string[],
  ): { reply: Reply | ReplyError; script?: ExecutedCommand['script'] } {
    const [first, count, ...rest] = args;
    if (first === undefined || count === undefined) {
      throw new ReplyError(`ERR wrong number of arguments for '${name}' command`);
    }
    const keyCount = Number(count);
    if (!Number.isInteger(keyCount) || keyCount < 0) {
      throw new ReplyError("ERR Number of keys can't be negative");
    }
    if (keyCount > rest.length)
      throw new ReplyError("ERR Number of keys can't be greater than number of args");
    let text: string | undefined;
    if (name === 'evalsha') {
      text = this.scripts.get(first.toLowerCase());
      if (text === undefined) {
        this.counts.noscript += 1;
        throw new ReplyError('NOSCRIPT No matching script. Please use EVAL.');
      }
    } else {
      text = first;
      const failed = compileScript(this.scriptText(text));
      if (failed) throw failed;
      this.scripts.set(sha1(text), text);
    }
    const keys = rest.slice(0, keyCount);
    const scriptArgs = rest.slice(keyCount);
    this.counts.scripts += 1;
    const context = this.context();
    const reply = runScript(this.scriptText(text), keys, scriptArgs, (command, commandArgs) => {
      if (command.toLowerCase() === 'eval' || command.toLowerCase() === 'evalsha') {
        throw new ReplyError('ERR This Redis command is not allowed from script');
      }
      return runCommand(context, command, commandArgs);
    });
    return { reply, script: { text, keys, args: scriptArgs } };
  }

  private scriptCommand(args: string[]): Reply {
    const sub = (args[0] ?? '').toLowerCase();
    if (sub === 'flush') {
      this.flushScripts();
      return new Status('OK');
    }
    if (sub === 'load') {
      const text = args[1] ?? '';
      const failed = compileScript(this.scriptText(text));
      if (failed) throw failed;
      const sha = sha1(text);
      this.scripts.set(sha, text);
      return sha;
    }
    if (sub === 'exists') return args.slice(1).map((sha) => (this.scripts.has(sha.toLowerCase()) ? 1 : 0));
    throw new ReplyError(`ERR unknown subcommand '${args[0] ?? ''}'. Try SCRIPT HELP.`);
  }

  private subscribe(session: ServerSession, name: string, channels: string[]): Reply {
    const set = name === 'subscribe' ? session.channels : session.shardChannels;
    // Redis answers one confirmation per channel; the connection turns them into one reply.
    return channels.map((channel) => {
      set.add(channel);
      return [name, channel, session.channels.size + session.shardChannels.size];
    });
  }

  private unsubscribe(session: ServerSession, name: string, channels: string[]): Reply {
    const set = name === 'unsubscribe' ? session.channels : session.shardChannels;
    const which = channels.length > 0 ? channels : [...set];
    return which.map((channel) => {
      set.delete(channel);
      return [name, channel, session.channels.size + session.shardChannels.size];
    });
  }

  private publish(channel: string, message: string, sharded: boolean): number {
    let receivers = 0;
    for (const session of this.sessions) {
      const set = sharded ? session.shardChannels : session.channels;
      if (!set.has(channel)) continue;
      receivers += 1;
      this.counts.published += 1;
      session.push(sharded ? 'smessage' : 'message', channel, message);
    }
    return receivers;
  }
}
