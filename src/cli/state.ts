import type { Cluster } from 'ioredis';
import {
  clientEntryKey,
  countDownLatchKeys,
  expirableSemaphoreKeys,
  fairLockKeys,
  fencingTokenKey,
  homeSlot,
  isHoldMark,
  lockKeys,
  NEVER_EXPIRES,
  readWriteLockKeys,
  prefixName,
} from '../protocol/keys';
import type { Connection } from './connect';

/**
 * Everything Redis holds under one name, read the way rlock and Redisson write it: the lock hash
 * and its holders, the fair queue, the fencing counter, a semaphore's permits or a latch's count,
 * and who listens for their wake-ups. Pure reads: inspecting never changes anything.
 */

/** What a live rlock client says about itself (see ClientRegistry). */
export interface ClientEntry {
  clientId: string;
  host?: string;
  pid?: number;
  script?: string;
  node?: string;
  started?: string;
  label?: string;
}

export interface Holder {
  ownerId: string;
  /** Hold count (re-entries included). */
  holds: number;
  /** In a read-write lock: whether this is the owner's write hold. */
  write?: boolean;
  /** The rlock client behind the owner id; absent for Redisson clients, explicit owner ids and closed clients. */
  client?: ClientEntry;
}

export interface QueuedWaiter {
  ownerId: string;
  /** Until its place expires unless its client refreshes it, in ms from now (negative: overdue). */
  placeExpiresInMs?: number;
  /**
   * A fair hand-off to it ran out unconfirmed: it keeps its place but is passed over until its
   * client shows it is alive.
   */
  passedOver?: true;
  /** The channel its client hears its hand-off on (a fair waiter), as its attempt left it. */
  hearsOn?: string;
  client?: ClientEntry;
}

export interface ExpirablePermit {
  /** 32 hex characters, as Redisson and rlock show permit ids. */
  id: string;
  /** Until it returns by itself, in ms from now; absent when it never expires. */
  expiresInMs?: number;
}

export interface NameState {
  name: string;
  /** What is there, e.g. ['lock', 'fair queue', 'fencing counter']; empty when nothing is. */
  kinds: string[];
  /** The lock's remaining ttl in ms (-1: none); absent when no lock hash exists. */
  ttlMs?: number;
  /** 'read' or 'write' for a read-write lock. */
  mode?: string;
  /** The name prefers writers (a read-write lock's writerPreference, kept in Redis). */
  writerPreference?: boolean;
  /** Writers of a writer-preferring read-write lock waiting to get in (new readers queue behind them). */
  waitingWriters?: QueuedWaiter[];
  holders: Holder[];
  /** The fair queue, first in line first. */
  queue: QueuedWaiter[];
  /** The waiter a fair release handed the lock to, until it confirms. */
  handoffTo?: string;
  fencingToken?: number;
  /** The integer at the name: a semaphore's available permits or a count-down latch's count. */
  counter?: number;
  expirablePermits?: ExpirablePermit[];
  /** Clients subscribed to each wake-up channel of the name (a waiting client listens there). */
  listeners: Record<string, number>;
}

/** The keys and channels of one name, as the library and Redisson name them. */
export function keysOf(name: string, keyPrefix: string, cluster: boolean) {
  const slot = homeSlot(name, keyPrefix, cluster);
  const fair = fairLockKeys(name, slot);
  const expirable = expirableSemaphoreKeys(name, slot);
  return {
    lock: lockKeys(name, slot).lock,
    fair,
    readWrite: readWriteLockKeys(name, slot),
    token: fencingTokenKey(name, slot),
    permitTimeouts: expirable.timeouts,
    channels: {
      lock: lockKeys(name, slot).channel,
      readWrite: prefixName('redisson_rwlock', name, slot),
      semaphore: expirable.channel,
      latch: countDownLatchKeys(name, slot).channel,
    },
  };
}

/** The rlock client id inside an owner id `<client id>:<n>` (a write hold adds `:write`). */
export function clientIdOf(ownerId: string): string | undefined {
  const bare = ownerId.endsWith(':write') ? ownerId.slice(0, -':write'.length) : ownerId;
  const colon = bare.lastIndexOf(':');
  return colon > 0 && /^\d+$/.test(bare.slice(colon + 1)) ? bare.slice(0, colon) : undefined;
}

/** Looks up the rlock client behind each owner id, once per client. */
export async function clientsOf(redis: Connection, ownerIds: string[]): Promise<Map<string, ClientEntry>> {
  const ids = [...new Set(ownerIds.map(clientIdOf).filter((id): id is string => id !== undefined))];
  const entries = new Map<string, ClientEntry>();
  await Promise.all(
    ids.map(async (clientId) => {
      const fields = await redis.hgetall(clientEntryKey(clientId));
      if (Object.keys(fields).length === 0) return;
      entries.set(clientId, {
        clientId,
        host: fields.host,
        pid: fields.pid === undefined ? undefined : Number(fields.pid),
        script: fields.script,
        node: fields.node,
        started: fields.started,
        label: fields.label,
      });
    }),
  );
  return entries;
}

/** Milliseconds since the epoch on the server (deadlines of fair places are server time). */
async function serverNow(redis: Connection): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Subscribers per channel: classic channels on every node of a cluster, shard channels where they live. */
async function listenersOf(
  redis: Connection,
  keyPrefix: string,
  channels: string[],
): Promise<Record<string, number>> {
  const prefixed = channels.map((channel) => keyPrefix + channel);
  const nodes = isCluster(redis) ? redis.nodes('master') : [redis];
  const counts = new Map<string, number>(channels.map((channel) => [channel, 0]));
  const add = (reply: unknown[]): void => {
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const channel = String(reply[i]).slice(keyPrefix.length);
      counts.set(channel, (counts.get(channel) ?? 0) + Number(reply[i + 1]));
    }
  };
  await Promise.all(
    nodes.map(async (node) => {
      // A server without pub/sub (PUBSUB renamed away, for the spin lock) has nobody listening.
      add((await node.call('PUBSUB', 'NUMSUB', ...prefixed).catch(nobodyWhereUnknown)) as unknown[]);
      // Sharded pub/sub (Redis 7); older servers answer with an error, which means nobody.
      const sharded = await node.call('PUBSUB', 'SHARDNUMSUB', ...prefixed).catch(() => []);
      add(sharded as unknown[]);
    }),
  );
  return Object.fromEntries([...counts].filter(([, count]) => count > 0));
}

/** An empty reply when `error` says the server does not know the command; else `error` again. */
function nobodyWhereUnknown(error: unknown): unknown[] {
  if (error instanceof Error && /unknown (sub)?command/i.test(error.message)) return [];
  throw error;
}

/** The channel of a client's address (see clientAddress), without the connection's keyPrefix. */
function channelOfAddress(address: string, keyPrefix: string): string {
  const channel = address.slice(2);
  return channel.startsWith(keyPrefix) ? channel.slice(keyPrefix.length) : channel;
}

export function isCluster(redis: Connection): redis is Cluster {
  return (redis as Cluster).isCluster === true;
}

/**
 * A fair lock's hand-off marker: field '' names the owner a hand-off waits for, a field per owner
 * one that is passed over (see lua/include/fair-queue.lua). An older rlock kept only the first, as
 * a string.
 */
async function fairHandoffs(redis: Connection, marker: string): Promise<Record<string, string>> {
  if ((await redis.type(marker)) !== 'string') return redis.hgetall(marker);
  const to = await redis.get(marker);
  return to === null ? {} : { '': to };
}

/** Reads what is stored under `name`. */
export async function readState(redis: Connection, name: string, keyPrefix: string): Promise<NameState> {
  const keys = keysOf(name, keyPrefix, isCluster(redis));
  const type = await redis.type(keys.lock);
  // Fair waiters' clients are kept by their address: how a script publishes to them, prefixed.
  const hearsOn = new Map(
    Object.entries(await redis.hgetall(keys.fair.channels)).map(([owner, address]) => [
      owner,
      channelOfAddress(address, keyPrefix),
    ]),
  );
  const [hash, value, ttl, queue, deadlines, handoff, token, timeouts, now, listeners] = await Promise.all([
    type === 'hash' ? redis.hgetall(keys.lock) : ({} as Record<string, string>),
    type === 'string' ? redis.get(keys.lock) : null,
    redis.pttl(keys.lock),
    redis.lrange(keys.fair.queue, 0, -1),
    redis.zrange(keys.fair.deadlines, 0, -1, 'WITHSCORES'),
    fairHandoffs(redis, keys.fair.marker),
    redis.get(keys.token),
    redis.zrangeBuffer(keys.permitTimeouts, 0, -1, 'WITHSCORES').catch(() => [] as Buffer[]),
    serverNow(redis),
    listenersOf(redis, keyPrefix, [...new Set([...Object.values(keys.channels), ...hearsOn.values()])]),
  ]);
  const [preference, writers] = await Promise.all([
    redis.exists(keys.readWrite.preference),
    redis.zrange(keys.readWrite.writers, 0, -1, 'WITHSCORES'),
  ]);
  const state: NameState = { name, kinds: [], holders: [], queue: [], listeners };
  if (preference === 1) state.writerPreference = true;
  if (writers.length > 0) {
    state.waitingWriters = [];
    for (let i = 0; i + 1 < writers.length; i += 2) {
      state.waitingWriters.push({
        ownerId: writers[i] as string,
        placeExpiresInMs: Number(writers[i + 1]) - now,
      });
    }
  }
  if (type === 'hash') {
    state.ttlMs = ttl;
    const mode = hash.mode;
    state.kinds.push(mode === undefined ? 'lock' : 'read-write lock');
    if (mode !== undefined) state.mode = mode;
    for (const [field, count] of Object.entries(hash)) {
      if (field === 'mode' || isHoldMark(field) || !/^-?\d+$/.test(count)) continue;
      const write = mode !== undefined && field.endsWith(':write');
      state.holders.push({ ownerId: field, holds: Number(count), ...(write ? { write } : {}) });
    }
  } else if (type === 'string') {
    if (value !== null && /^-?\d+$/.test(value)) {
      state.counter = Number(value);
      state.kinds.push(timeouts.length > 0 ? 'permit-expirable semaphore' : 'semaphore or count-down latch');
    } else {
      state.kinds.push('string (not a lock)');
    }
    state.ttlMs = ttl;
  } else if (type !== 'none') {
    state.kinds.push(`${type} (not a lock)`);
  }
  if (timeouts.length > 0) {
    if (!state.kinds.includes('permit-expirable semaphore')) state.kinds.push('permit-expirable semaphore');
    state.expirablePermits = [];
    for (let i = 0; i + 1 < timeouts.length; i += 2) {
      const score = Number(String(timeouts[i + 1]));
      state.expirablePermits.push({
        id: (timeouts[i] as Buffer).toString('hex'),
        ...(score >= NEVER_EXPIRES ? {} : { expiresInMs: score - Date.now() }),
      });
    }
  }
  const handoffTo = handoff[''];
  if (queue.length > 0 || handoffTo !== undefined) state.kinds.push('fair queue');
  const deadlineOf = new Map<string, number>();
  for (let i = 0; i + 1 < deadlines.length; i += 2)
    deadlineOf.set(deadlines[i] as string, Number(deadlines[i + 1]));
  state.queue = queue.map((ownerId) => {
    const deadline = deadlineOf.get(ownerId);
    return {
      ownerId,
      ...(deadline === undefined ? {} : { placeExpiresInMs: deadline - now }),
      ...(handoff[ownerId] === undefined ? {} : { passedOver: true as const }),
      ...(hearsOn.has(ownerId) ? { hearsOn: hearsOn.get(ownerId) } : {}),
    };
  });
  if (handoffTo !== undefined) state.handoffTo = handoffTo;
  if (token !== null) {
    state.fencingToken = Number(token);
    state.kinds.push('fencing counter');
  }
  const clients = await clientsOf(
    redis,
    [...state.holders, ...state.queue, ...(state.waitingWriters ?? [])].map((entry) => entry.ownerId),
  );
  for (const entry of [...state.holders, ...state.queue, ...(state.waitingWriters ?? [])]) {
    const id = clientIdOf(entry.ownerId);
    const client = id === undefined ? undefined : clients.get(id);
    if (client) entry.client = client;
  }
  return state;
}
