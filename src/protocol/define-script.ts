import { createHash } from 'node:crypto';
import { coalesceWrites } from '../redis/coalesce-writes';
import { LUA_SCRIPTS } from './lua.generated';
import type { RedisConnection } from '../redis/connection';

/**
 * How every script of lua/ is called (protocol/scripts/ has one typed function per script, one
 * file per kind of object). A script goes out as EVALSHA of its digest and, when
 * the server does not know it, again as EVAL of its text (so SCRIPT FLUSH, a restart or a failover
 * is survived): as a plain command on an ioredis connection (see sendsDirectly), otherwise through
 * a command registered once per connection with defineCommand, which does the same. The digest
 * (and the registered command's name, which carries part of it) follows the script text, so two
 * rlock versions sharing one connection never run each other's scripts.
 */

export type ScriptArg = string | number;

/** How a script announces releases: classic pub/sub, or a cluster's shard channels. */
export type PublishCommand = 'publish' | 'spublish';
/**
 * How a lock's release announces itself: as PublishCommand says, or not at all ('none': the spin
 * lock, which is for servers that have no pub/sub command).
 */
export type ReleaseAnnouncement = PublishCommand | 'none';
type ScriptCall = (...args: Array<ScriptArg | ScriptArg[]>) => Promise<unknown>;

export type Script<Keys extends string[], Args extends ScriptArg[], Result> = (
  redis: RedisConnection,
  keys: Keys,
  args: Args,
) => Promise<Result>;

/** A script's text, its `--@include` lines resolved (scripts/lua-module.ts builds it from lua/). */
function readLua(file: string): string {
  const lua = LUA_SCRIPTS[file];
  if (lua === undefined)
    throw new Error(`lua/${file} is not in src/protocol/lua.generated.ts: run npm run build:lua`);
  return lua;
}

/** The part of an ioredis client its script commands use when they run (see scriptSender). */
interface CommandSender {
  options: { enableAutoPipelining?: boolean };
  sendCommand(command: unknown, stream?: unknown, node?: unknown): unknown;
}

const directSenders = new WeakMap<object, CommandSender>();

/**
 * What a script command is called on: the connection itself, unless it has ioredis'
 * `enableAutoPipelining`. An auto-pipeline is a Pipeline made when the first command of a tick
 * arrives, and it knows only the scripts defined by then: a script rlock defines later in that
 * tick is "not a function" there, and ioredis then throws from its own callback, which ends the
 * process. An auto-pipeline also answers all its commands together, one pipeline at a time, so a
 * slow command would hold the others past their budgets. rlock's scripts therefore go out as
 * ordinary commands, through an object that looks to ioredis' script function like a client
 * without auto-pipelining and hands each command to the connection's own sendCommand.
 */
function scriptSender(redis: RedisConnection): RedisConnection {
  const client = redis as unknown as Partial<CommandSender>;
  if (client.options?.enableAutoPipelining !== true || typeof client.sendCommand !== 'function') return redis;
  let sender = directSenders.get(redis);
  if (!sender) {
    const connection = client as CommandSender;
    sender = {
      // Every other option read through, live; only auto-pipelining is off.
      options: Object.create(connection.options, { enableAutoPipelining: { value: false } }) as {
        enableAutoPipelining: boolean;
      },
      sendCommand: (command, stream, node) => connection.sendCommand(command, stream, node),
    };
    directSenders.set(redis, sender);
  }
  return sender as unknown as RedisConnection;
}

/** A connection's own EVALSHA and EVAL (ioredis, iovalkey): see sendsDirectly. */
interface DirectScripting {
  evalsha(sha: string, keyCount: number, ...keysAndArgs: Array<ScriptArg | ScriptArg[]>): Promise<unknown>;
  eval(lua: string, keyCount: number, ...keysAndArgs: ScriptArg[]): Promise<unknown>;
  options: { keyPrefix?: string | Buffer };
}

/**
 * Whether scripts go to this connection as plain EVALSHA commands (an ioredis or iovalkey Redis,
 * standalone or behind Sentinel). ioredis' own script commands (defineCommand) wrap every call in
 * a second promise whose handler, kept until the answer, holds the call's key and argument arrays,
 * and in a second handler on the command's rejection: about 500 bytes more per script call in
 * flight than a plain command, which is what the garbage collector copies when thousands are.
 * A Cluster (whose nodes' connections send the commands) and other clients keep defineCommand.
 */
function sendsDirectly(redis: RedisConnection): boolean {
  const client = redis as unknown as Partial<DirectScripting> & { isCluster?: boolean };
  return (
    'commandQueue' in redis &&
    client.isCluster !== true &&
    typeof client.evalsha === 'function' &&
    typeof client.eval === 'function'
  );
}

/** A script's text and digest, made when it first runs. */
interface ScriptText {
  lua: string;
  sha: string;
  /** Per connection: the rejection handler of its EVALSHA calls there (see noScriptHandler). */
  readonly handlers: WeakMap<object, (error: unknown) => Promise<unknown>>;
}

/** The keys and arguments of a script call that failed, as the call gave them (see failedCall). */
type CallArgs = [keyCount: number, ...keysAndArgs: unknown[]];

/**
 * The keys and arguments of the EVALSHA that failed with `error`, read back from the error (ioredis
 * puts the failed command there) with the connection's keyPrefix taken off the keys, as EVAL puts
 * it back; undefined when `error` is not a NOSCRIPT answer.
 */
function failedCall(error: unknown, keyPrefix: string | Buffer | undefined): CallArgs | undefined {
  const failed = (error as { command?: { args?: unknown[] } } | null)?.command?.args;
  if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT') || !Array.isArray(failed)) {
    return undefined;
  }
  const keyCount = Number(failed[1]);
  const rest = failed.slice(2);
  if (keyPrefix !== undefined && keyPrefix.length > 0) {
    for (let i = 0; i < keyCount; i += 1) rest[i] = withoutPrefix(rest[i], keyPrefix);
  }
  return [keyCount, ...rest];
}

/** `key` without the leading `prefix` ioredis gave it: bytes for a Buffer key, characters otherwise. */
function withoutPrefix(key: unknown, prefix: string | Buffer): unknown {
  if (Buffer.isBuffer(key)) {
    const bytes = Buffer.isBuffer(prefix) ? prefix : Buffer.from(prefix);
    return key.subarray(0, bytes.length).equals(bytes) ? key.subarray(bytes.length) : key;
  }
  const text = prefix.toString();
  return typeof key === 'string' && key.startsWith(text) ? key.slice(text.length) : key;
}

/**
 * The rejection handler of a script's EVALSHA calls on `redis`, one per connection and script, not
 * one per call. A server that does not know the script (its first run there, a restart, SCRIPT
 * FLUSH, a failover) answers NOSCRIPT and ran nothing: the call is sent again as EVAL of the text,
 * which also caches it. When many calls were in flight, only the first of them sends the text; the
 * others, answered before it ran, go out again as EVALSHA behind it on the same connection (and as
 * EVAL only if the server forgot the script once more), instead of each sending the whole text.
 */
function noScriptHandler(text: ScriptText, redis: RedisConnection): (error: unknown) => Promise<unknown> {
  const known = text.handlers.get(redis);
  if (known) return known;
  const direct = redis as unknown as DirectScripting;
  /** The text is on its way on this connection: what is sent after it finds the script. */
  let textPending = false;
  const textSent = (): void => {
    textPending = false;
  };
  /** Sends the call that failed with `error` again: as EVAL of the text, or as EVALSHA behind it. */
  const sendAgain = (error: unknown, asText: boolean): Promise<unknown> => {
    const call = failedCall(error, direct.options.keyPrefix) as [number, ...ScriptArg[]] | undefined;
    if (!call) return Promise.reject(error);
    coalesceWrites(redis);
    if (!asText) return direct.evalsha.call(scriptSender(redis), text.sha, ...call).then(undefined, sendText);
    textPending = true;
    const sent = direct.eval.call(scriptSender(redis), text.lua, ...call);
    sent.then(textSent, textSent);
    return sent;
  };
  const sendText = (error: unknown): Promise<unknown> => sendAgain(error, true);
  const handler = (error: unknown): Promise<unknown> => sendAgain(error, !textPending);
  text.handlers.set(redis, handler);
  return handler;
}

export function defineScript<Keys extends string[], Args extends ScriptArg[], Result>(
  file: string,
): Script<Keys, Args, Result> {
  let text: ScriptText | undefined;
  let baseName = '';
  /** Command names by key count, made once. */
  const names: string[] = [];
  // Read and hashed lazily: importing the package hashes no script it never runs.
  const scriptText = (): ScriptText => {
    if (text === undefined) {
      const lua = readLua(file);
      const sha = createHash('sha1').update(lua).digest('hex');
      text = { lua, sha, handlers: new WeakMap() };
      baseName = `rlock_${file.replace(/\W/g, '_')}_${sha.slice(0, 12)}`;
    }
    return text;
  };
  return (redis, keys, args) => {
    try {
      const { lua, sha } = scriptText();
      if (sendsDirectly(redis)) {
        // Here, where the command is written (a send may await something before it gets here).
        coalesceWrites(redis);
        const direct = redis as unknown as DirectScripting;
        // ioredis flattens array arguments: no spread of keys and args into a new array per call.
        const reply = direct.evalsha.call(scriptSender(redis), sha, keys.length, keys, args);
        return reply.then(undefined, noScriptHandler(text as ScriptText, redis)) as Promise<Result>;
      }
      // One command per key count: batches vary in size, and clients differ in how they read a
      // key count passed at call time (ioredis-mock ignores it), so it is always declared.
      const name = (names[keys.length] ??= `${baseName}_${keys.length}`);
      const commands = redis as unknown as Record<string, ScriptCall | undefined>;
      let command = commands[name];
      if (typeof command !== 'function') {
        redis.defineCommand(name, { lua, numberOfKeys: keys.length });
        command = commands[name] as ScriptCall;
      }
      coalesceWrites(redis);
      const reply = command.call(scriptSender(redis), keys, args);
      return (answersNilAsNull(redis) ? reply : reply.then(nilAsNull)) as Promise<Result>;
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/**
 * A script that goes out as EVAL of its text every time, never as EVALSHA: for one that runs
 * seldom, after Redis failed to answer, over a connection that may be slow, where the NOSCRIPT
 * round trip of its first EVALSHA on a server would double the time it takes to reach Redis.
 */
export function defineScriptSentAsText<Keys extends string[], Args extends ScriptArg[], Result>(
  file: string,
): Script<Keys, Args, Result> {
  let lua: string | undefined;
  return (redis, keys, args) => {
    try {
      lua ??= readLua(file);
      const client = redis as unknown as {
        eval(lua: string, keyCount: number, ...keysAndArgs: ScriptArg[]): Promise<unknown>;
      };
      const reply = client.eval.call(
        sendsDirectly(redis) ? scriptSender(redis) : redis,
        lua,
        keys.length,
        ...keys,
        ...args,
      );
      return (answersNilAsNull(redis) ? reply : reply.then(nilAsNull)) as Promise<Result>;
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/**
 * ioredis (and iovalkey, its fork) answers a Lua nil with null, ioredis-mock with undefined. A
 * connection known to be one of the first is answered as is: no promise more per script call.
 */
function answersNilAsNull(redis: RedisConnection): boolean {
  return 'commandQueue' in redis || (redis as { isCluster?: boolean }).isCluster === true;
}

function nilAsNull(reply: unknown): unknown {
  return reply === undefined ? null : reply;
}
