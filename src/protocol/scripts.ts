import { createHash } from 'node:crypto';
import { coalesceWrites } from '../redis/coalesce-writes';
import { LUA_SCRIPTS } from './lua.generated';
import type { RedisConnection } from '../redis/connection';

/**
 * One typed function per Lua script in lua/. A script goes out as EVALSHA of its digest and, when
 * the server does not know it, again as EVAL of its text (so SCRIPT FLUSH, a restart or a failover
 * is survived): as a plain command on an ioredis connection (see sendsDirectly), otherwise through
 * a command registered once per connection with defineCommand, which does the same. The digest
 * (and the registered command's name, which carries part of it) follows the script text, so two
 * rlock versions sharing one connection never run each other's scripts.
 */

type ScriptArg = string | number;

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

function defineScript<Keys extends string[], Args extends ScriptArg[], Result>(
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
function defineScriptSentAsText<Keys extends string[], Args extends ScriptArg[], Result>(
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

/**
 * Returns null when acquired or re-entered, else the holder's remaining ttl (ms, -1 = no expiry),
 * or -3 when the request was withdrawn before it ran.
 */
export const acquireLock = defineScript<
  [lock: string, holdLatch: string],
  [leaseMs: number, ownerId: string, markField: string],
  number | null
>('lock/acquire.lua');

/** Returns [1, token] when acquired or re-entered, [0, ttl] when another owner holds the lock. */
export const acquireFencedLock = defineScript<
  [lock: string, holdLatch: string, tokenCounter: string],
  [leaseMs: number, ownerId: string, markField: string],
  [1 | 0, number]
>('fenced/acquire.lua');

/**
 * Which hold a release gives back: the one its request marks, or any one of the owner's (for a hold
 * Redis did not mark; see lua/include/holds.lua), given as the end of the release's window (server
 * ms, see RequestWindow): a copy that runs later takes nothing.
 */
export type ReleaseWhich = 'marked' | number;

/** What the release of the last hold answers when it handed the lock on or woke a waiting client. */
export const RELEASED_AND_HANDED_ON = 3;

/**
 * A release script's answer: 1 free, 0 still held by the owner, null the hold was gone, or
 * RELEASED_AND_HANDED_ON (see BaseLock.releaseAnswered).
 */
export type ReleaseAnswer = 0 | 1 | typeof RELEASED_AND_HANDED_ON | null;

/**
 * Returns 1 when the lock is free now, 0 when the owner still holds it, null when the hold is gone;
 * 1 + HANDED_ON when it is free and a waiting client was woken.
 */
export const releaseLock = defineScript<
  [lock: string, channel: string, holdLatch: string, waiters: string],
  [ownerId: string, latchMs: number, publish: ReleaseAnnouncement, which: ReleaseWhich, markField: string],
  ReleaseAnswer
>('lock/release.lua');

/** Returns 1 when a lock existed and is gone now, 0 when there was none. */
export const forceReleaseLock = defineScript<
  [lock: string, channel: string, waiters: string],
  [publish: ReleaseAnnouncement],
  0 | 1
>('lock/force-release.lua');

/**
 * An attempt of a getLock wait that listens for wake-ups, keeping the client among the lock's
 * waiters (see lua/include/lock-waiters.lua): null when acquired or re-entered; the holder's ttl;
 * [ttl] when the holder is not an rlock client (its release is heard only on Redisson's channel);
 * -3 when withdrawn.
 */
export const waitForLock = defineScript<
  [lock: string, holdLatch: string, waiters: string],
  [leaseMs: number, ownerId: string, markField: string, address: string, alone: '1' | '0'],
  number | [number] | null
>('lock/wait.lua');

/**
 * Passes a getLock wake-up on to the client that has waited longest, when the lock is free;
 * HANDED_ON when one was woken, else 0.
 */
export const passOnLockWakeup = defineScript<[lock: string, waiters: string], [ownAddress: string], number>(
  'lock/pass-on.lua',
);

/** Returns, for each lock, 1 when renewed and 0 when its owner no longer holds it. */
export const renewLocks = defineScript<string[], ScriptArg[], number[]>('lock/renew.lua');

/**
 * Added to a fair script's answer when it handed the lock to a waiter: the client that sent it
 * watches that hand-off (see HandoffWatches).
 */
export const HANDED_ON = 2;

/** Whether a fair script's answer says it handed the lock on (see HANDED_ON). */
export function handedOn(answer: number | null): boolean {
  return answer !== null && (answer & HANDED_ON) !== 0;
}

/** The fair lock's keys, in the order every fair script takes them. */
export type FairKeys = [
  lock: string,
  queue: string,
  deadlines: string,
  marker: string,
  channels: string,
  redissonQueue: string,
  redissonTimeouts: string,
];

/**
 * A first attempt that never queues (see lua/fair/try.lua): null when acquired or re-entered, -4
 * when waiters are queued on a free lock (acquireFairLock decides), else as acquireFairLock.
 */
export const tryFairLock = defineScript<
  [lock: string, queue: string, holdLatch: string, redissonQueue: string],
  [leaseMs: number, ownerId: string, markField: string],
  number | null
>('fair/try.lua');

/** Returns null when acquired, re-entered or handed the lock, else the holder's ttl (ms, -1 = no expiry). */
export const acquireFairLock = defineScript<
  [...FairKeys, holdLatch: string],
  [
    leaseMs: number,
    ownerId: string,
    waiterTimeoutMs: number,
    mode: 'try' | 'first' | 'queued',
    markField: string,
    handoffTimeoutMs: number,
    /** Where this owner's client hears hand-offs (see clientAddress). */
    address: string,
    publish: PublishCommand,
  ],
  /** [ttl]: rlock's waiters keep a place in Redisson's queue; listen where that place is told. */
  number | [number] | null
>('fair/acquire.lua');

/**
 * Returns 1 when the owner's last hold is gone, 0 when it still holds, null when it held nothing;
 * 1 + HANDED_ON when the last hold went and the lock was handed to the next waiter.
 */
export const releaseFairLock = defineScript<
  [...FairKeys, holdLatch: string],
  [
    ownerId: string,
    latchMs: number,
    handoffTimeoutMs: number,
    which: ReleaseWhich,
    markField: string,
    publish: PublishCommand,
  ],
  ReleaseAnswer
>('fair/release.lua');

/**
 * Leaves the queue; returns 1 when a hand-off that came too late was given back, else 0, plus
 * HANDED_ON when the lock was handed to the next waiter.
 */
export const leaveFairQueue = defineScript<
  FairKeys,
  [ownerId: string, handoffTimeoutMs: number, publish: PublishCommand],
  number
>('fair/leave.lua');

/**
 * Hands the lock on if a hand-off this client made was never taken up (its provisional grant ran
 * out); HANDED_ON when it did, else 0.
 */
export const settleFairHandoff = defineScript<
  FairKeys,
  [handoffTimeoutMs: number, publish: PublishCommand],
  number
>('fair/settle.lua');

/** Takes over a hand-off with the owner's own lease, marked for a request; 1 when held, 0 when lost. */
export const confirmFairHandoff = defineScript<
  [...FairKeys, holdLatch: string],
  [ownerId: string, leaseMs: number, markField: string],
  0 | 1
>('fair/confirm.lua');

/**
 * Returns 1 when a lock existed and is gone now, 0 when there was none, plus HANDED_ON when it was
 * handed to the next waiter.
 */
export const forceReleaseFairLock = defineScript<
  FairKeys,
  [handoffTimeoutMs: number, publish: PublishCommand],
  number
>('fair/force-release.lua');

/**
 * Keys: each lock's FairKeys once. Args: waiter timeout, hand-off timeout, publish command, then per
 * lock the number of its waiters and their owner ids. Returns, for each owner id in that order, 1
 * when its place was kept and 0 when its waiter must look again (the place is gone, or a hand-off
 * to it is pending or was passed over); then for each lock HANDED_ON when the call handed it to a
 * waiter, else 0.
 */
export const refreshFairPlaces = defineScript<string[], ScriptArg[], number[]>('fair/refresh.lua');

/** Writes what a client says about itself (host, process, ...) with a lifetime; returns 1. */
export const announceClient = defineScript<[entry: string], [lifetimeMs: number, ...facts: string[]], 1>(
  'client/announce.lua',
);

/** Returns 1 when the withdrawn request had taken a hold and it is released now, else 0. */
export const withdrawLock = defineScript<
  [lock: string, channel: string, holdLatch: string, waiters: string],
  [ownerId: string, latchMs: number, publish: ReleaseAnnouncement, markField: string],
  0 | 1
>('lock/withdraw.lua');

/**
 * Returns 1 when the withdrawn request had taken a hold and it is released now, else 0, plus
 * HANDED_ON when that handed the lock to the next waiter.
 */
export const withdrawFairLock = defineScript<
  [...FairKeys, holdLatch: string],
  [ownerId: string, latchMs: number, handoffTimeoutMs: number, markField: string, publish: PublishCommand],
  number
>('fair/withdraw.lua');

/**
 * The synchronizers' scripts take their request's window (`until`, server ms; see RequestWindow)
 * and how long its latch outlives it (`latchMs`); a copy that runs after the window rejects with a
 * LATE reply and takes no effect.
 */

/**
 * Settles a request that went unanswered (see lua/request/settle.lua): its latch's value when it
 * took effect, 'w' when it had not (and now never will), null when its latch is gone. Sent as its
 * text: it must reach Redis before the latch is gone, in one trip however slow the link.
 */
export const settleRequest = defineScriptSentAsText<
  [requestLatch: string],
  [until: number, latchMs: number],
  string | null
>('request/settle.lua');

/** Returns [1, 0] when the permits were taken, [0, available] when too few are, [-3, 0] when withdrawn. */
export const acquireSemaphore = defineScript<
  [permits: string, requestLatch: string],
  [permits: number, latchMs: number, until: number],
  [1 | 0 | -3, number]
>('semaphore/acquire.lua');

/** Returns the available permits after adding (release, addPermits; negative takes away). */
export const addSemaphorePermits = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  number
>('semaphore/add.lua');

/** Returns 1 when the request had taken permits and they are back, else 0 (`until`: the acquire's window). */
export const withdrawSemaphore = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('semaphore/withdraw.lua');

/** Returns 1 when the permits were set, 0 when they were set already. */
export const trySetSemaphorePermits = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('semaphore/try-set.lua');

/** Returns how many permits were taken. */
export const drainSemaphore = defineScript<
  [permits: string, requestLatch: string],
  [latchMs: number, until: number],
  number
>('semaphore/drain.lua');

/** The permit-expirable semaphore's keys, in the order its acquire takes them. */
type ExpirableKeys = [permits: string, timeouts: string, channel: string];

/** Returns null when taken, else the ms until the first permit out expires (-1: none will), -3 when withdrawn. */
export const acquireExpirablePermit = defineScript<
  [...ExpirableKeys, requestLatch: string],
  [permitId: string, leaseMs: number, publish: PublishCommand, until: number],
  number | null
>('expirable-semaphore/acquire.lua');

/** Returns 1 when released, 0 when the permit was unknown or had expired. */
export const releaseExpirablePermit = defineScript<
  [permits: string, channel: string, timeouts: string, requestLatch: string],
  [permitId: string, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('expirable-semaphore/release.lua');

/** Returns 1 when the withdrawn request's permit is back, else 0 (`until`: the acquire's window). */
export const withdrawExpirablePermit = defineScript<
  [permits: string, channel: string, timeouts: string, requestLatch: string],
  [permitId: string, latchMs: number, publish: PublishCommand, until: number],
  0 | 1
>('expirable-semaphore/withdraw.lua');

/** Returns the available permits after adding. */
export const addExpirablePermits = defineScript<
  [permits: string, channel: string, requestLatch: string],
  [permits: number, latchMs: number, publish: PublishCommand, until: number],
  number
>('expirable-semaphore/add.lua');

/** Returns the available permits, expired ones put back first. */
export const availableExpirablePermits = defineScript<ExpirableKeys, [publish: PublishCommand], number>(
  'expirable-semaphore/available.lua',
);

/** Returns 1 when the permit's lease was updated, 0 when it is unknown or expired. */
export const updateExpirablePermitLease = defineScript<
  ExpirableKeys,
  [permitId: string, leaseMs: number, publish: PublishCommand],
  0 | 1
>('expirable-semaphore/update-lease.lua');

/** Returns 1 when the count was set, 0 when one was set already. */
export const trySetLatchCount = defineScript<
  [count: string, channel: string, requestLatch: string],
  [count: number, latchMs: number, publish: PublishCommand, message: string, until: number],
  0 | 1
>('latch/try-set.lua');

/** Returns the count left (0: open). */
export const countDownLatch = defineScript<
  [count: string, channel: string, requestLatch: string],
  [latchMs: number, publish: PublishCommand, message: string, until: number],
  number
>('latch/count-down.lua');

/** Returns 1 when a latch existed and is gone, else 0. */
export const deleteLatch = defineScript<
  [count: string, channel: string, requestLatch: string],
  [latchMs: number, publish: PublishCommand, message: string, until: number],
  0 | 1
>('latch/delete.lua');

/**
 * Returns null when the read lock is acquired or re-entered, else how long to wait at most (ms; -1
 * = no expiry), or -3 when the request was withdrawn before it ran.
 */
export const acquireReadLock = defineScript<
  [lock: string, holdLatch: string, timeoutPrefix: string, writers: string, preference: string],
  [leaseMs: number, ownerId: string, writeField: string, markField: string],
  number | null
>('rwlock/read-acquire.lua');

/** As acquireReadLock, for the write lock; a waiting writer of a writer-preferring name keeps a place. */
export const acquireWriteLock = defineScript<
  [lock: string, holdLatch: string, writers: string, preference: string],
  [
    leaseMs: number,
    writeField: string,
    mode: 'try' | 'first' | 'queued',
    placeMs: number,
    prefer: '1' | '',
    markField: string,
  ],
  number | null
>('rwlock/write-acquire.lua');

/** The keys of a read hold's release and withdrawal. */
type ReadReleaseKeys = [
  lock: string,
  channel: string,
  holdLatch: string,
  timeoutPrefix: string,
  timeoutBase: string,
  writers: string,
  preference: string,
];

/** The keys of a write hold's release and withdrawal. */
type WriteReleaseKeys = [
  lock: string,
  channel: string,
  holdLatch: string,
  timeoutBase: string,
  writers: string,
  preference: string,
];

/** Returns 1 when the owner's last read hold is gone, 0 when it still reads, null when the hold is gone. */
export const releaseReadLock = defineScript<
  ReadReleaseKeys,
  [ownerId: string, latchMs: number, publish: PublishCommand, which: ReleaseWhich, markField: string],
  0 | 1 | null
>('rwlock/read-release.lua');

/** Returns 1 when the write lock is released, 0 when the owner still writes, null when the hold is gone. */
export const releaseWriteLock = defineScript<
  WriteReleaseKeys,
  [writeField: string, latchMs: number, publish: PublishCommand, which: ReleaseWhich, markField: string],
  0 | 1 | null
>('rwlock/write-release.lua');

/** Returns 1 when the withdrawn read request had taken a hold and it is released now, else 0. */
export const withdrawReadLock = defineScript<
  ReadReleaseKeys,
  [ownerId: string, latchMs: number, publish: PublishCommand, markField: string],
  0 | 1
>('rwlock/read-withdraw.lua');

/** Returns 1 when the withdrawn write request had taken a hold and it is released now, else 0. */
export const withdrawWriteLock = defineScript<
  WriteReleaseKeys,
  [writeField: string, latchMs: number, publish: PublishCommand, markField: string],
  0 | 1
>('rwlock/write-withdraw.lua');

/** Returns 1 when a lock in that mode existed and is gone now, else 0. */
export const forceReleaseReadWriteLock = defineScript<
  [lock: string, channel: string, writers: string, preference: string],
  [mode: 'read' | 'write', publish: PublishCommand],
  0 | 1
>('rwlock/force-release.lua');

/**
 * Keys: per hold its lock hash, its read timeout prefix (a write hold: the hash again) and the
 * name's writer-preference flag. Args: lease, then per hold its field and 'r' or 'w'.
 */
export const renewReadWriteLocks = defineScript<string[], ScriptArg[], number[]>('rwlock/renew.lua');

/** A waiting writer leaves its place; returns 1 when it had one. */
export const leaveWriterQueue = defineScript<
  [writers: string, channel: string, lock: string, preference: string],
  [writeField: string, publish: PublishCommand],
  0 | 1
>('rwlock/leave.lua');

/** Sets the lease of an owner's read holds; returns 1 when set, 0 when it holds none. */
export const setReadLease = defineScript<
  [lock: string, timeoutPrefix: string, timeoutBase: string],
  [leaseMs: number, ownerId: string],
  0 | 1
>('rwlock/set-read-lease.lua');
