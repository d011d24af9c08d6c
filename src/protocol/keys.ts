import { hashSlot, hashTagOf, tagForSlot } from '../redis/slots';

/**
 * Every Redis key and channel name rlock uses, in one place.
 *
 * The layout is Redisson's, so a Java service on Redisson and a Node service on rlock exclude each
 * other on one name: the lock is a hash at the name itself; other keys carry the name as a hash tag
 * ({name}) so every key of one lock lives in the cluster slot of the name.
 */

/**
 * A key of lock `name` under `prefix`, always in the cluster slot of the lock hash.
 *
 * Redisson's RedissonObject.prefixName writes `prefix:{name}`, or `prefix:name` when the name has a
 * brace already; both are kept where they land in the lock's slot, so the keys stay Redisson's for
 * every ordinary name. A name whose braces do not form a hash tag would scatter Redisson's keys over
 * other slots (CROSSSLOT on a cluster, Redisson issue #1098): `a{b` is wrapped whole (`prefix:{a{b}`),
 * and a name with a stray '}', which no hash tag can hold, gets a tag chosen for its slot.
 *
 * @param slot the slot of the lock hash when it is not the name's own: an ioredis `keyPrefix` on a
 *             cluster puts the hash at `<keyPrefix><name>` (see homeSlot); keys that would land
 *             elsewhere get a tag chosen for it.
 */
export function prefixName(prefix: string, name: string, slot?: number): string {
  const natural =
    hashTagOf(name) !== undefined
      ? `${prefix}:${name}`
      : name.includes('}')
        ? undefined
        : `${prefix}:{${name}}`;
  if (natural !== undefined && (slot === undefined || hashSlot(natural) === slot)) return natural;
  return `${prefix}:{${tagForSlot(slot ?? hashSlot(name))}}${name}`;
}

/**
 * The cluster slot every key of lock `name` must share when an ioredis `keyPrefix` moves the lock
 * hash out of the name's own slot; undefined when nothing moves (no prefix, or not a cluster).
 * ioredis adds the prefix to every key, so the hash lives at `<keyPrefix><name>`.
 */
export function homeSlot(name: string, keyPrefix: string, cluster: boolean): number | undefined {
  return cluster && keyPrefix !== '' ? hashSlot(keyPrefix + name) : undefined;
}

export interface LockKeys {
  /** The lock hash: field owner id -> hold count. */
  readonly lock: string;
  /** Where releases are announced (Redisson's redisson_lock__channel). */
  readonly channel: string;
}

/** `slot`: see prefixName. */
export function lockKeys(name: string, slot?: number): LockKeys {
  return { lock: name, channel: prefixName('redisson_lock__channel', name, slot) };
}

/**
 * How a client's channel is published to: 'sharded' (SPUBLISH, a shard channel), 'classic'
 * (PUBLISH, whose answer counts the receivers), 'broadcast' (PUBLISH on a cluster: the message
 * reaches every node, but the answer counts only one node's receivers).
 */
export type AddressWay = 'sharded' | 'classic' | 'broadcast';

const ADDRESS_WAYS: Record<AddressWay, string> = { sharded: 's', classic: 'p', broadcast: 'b' };

/** The way to a client that publishes with `publish`, on a cluster or not. */
export function addressWay(publish: 'publish' | 'spublish', cluster: boolean): AddressWay {
  return publish === 'spublish' ? 'sharded' : cluster ? 'broadcast' : 'classic';
}

/**
 * Where a client hears the messages meant for it alone (see lua/include/addresses.lua): its channel,
 * under the connection's keyPrefix (scripts get it as an argument, which ioredis does not prefix),
 * and how it is published to.
 */
export function clientAddress(channel: string, keyPrefix: string, way: AddressWay): string {
  return `${ADDRESS_WAYS[way]}:${keyPrefix}${channel}`;
}

/** What a getLock release sends the client it wakes, before the lock's key (see lock-waiters.lua). */
export const WAKE_MESSAGE = 'wake\n';

/**
 * The clients waiting for a getLock lock, each by the channel it hears wake-ups on (see
 * lua/include/lock-waiters.lua and lockWakeChannel). `slot`: see prefixName.
 */
export function lockWaitersKey(name: string, slot?: number): string {
  return prefixName('rlock_lock_waiters', name, slot);
}

/**
 * Where client `clientId` hears that lock `name` (getLock) was released for it: its own channel
 * (clientChannel); with sharded pub/sub, whose channels are bound to a slot, a channel of its own
 * in the lock's slot, subscribed while it waits there.
 */
export function lockWakeChannel(name: string, clientId: string, sharded: boolean, slot?: number): string {
  return sharded ? `${prefixName('rlock_lock__channel', name, slot)}:${clientId}` : clientChannel(clientId);
}

const LATCH_PREFIX = 'rlock_hold_latch';

/**
 * The latch key of one acquire or release request of lock `name`: with the request's mark field
 * (holdMarkField) it makes the request take effect once, holding the rare records that outlive the
 * hold (see lua/include/holds.lua). It is `<holdLatchBase>:<requestId>`; the base is the same for
 * every request on the lock.
 */
export function holdLatchBase(name: string, slot?: number): string {
  return prefixName(LATCH_PREFIX, name, slot);
}

const MARK_PREFIX = 'rlock_mark:';

/**
 * The field that marks the hold of request `requestId` in the lock hash (see lua/include/holds.lua).
 * It leaves out the lock's name, unlike the latch key: a short field keeps a lock hash in Redis'
 * compact encoding (every field within hash-max-listpack-value, 64 bytes), which the scripts
 * write, read and delete for less than the hash table a longer field turns it into.
 */
export function holdMarkField(requestId: string): string {
  return `${MARK_PREFIX}${requestId}`;
}

/** Whether a field of a lock hash is a hold's mark rather than an owner id (a holder). */
export function isHoldMark(field: string): boolean {
  return field.startsWith(MARK_PREFIX);
}

/** The fenced lock's token counter (Redisson RFencedLock's redisson_lock_token:{name}). */
export function fencingTokenKey(name: string, slot?: number): string {
  return prefixName('redisson_lock_token', name, slot);
}

export interface FairLockKeys extends LockKeys {
  /** List of waiting owner ids in arrival order. */
  readonly queue: string;
  /** Zset owner id -> server time (ms) when its place expires unless refreshed. */
  readonly deadlines: string;
  /** The hand-offs not taken up (see lua/include/fair-queue.lua). */
  readonly marker: string;
  /** Hash owner id -> the channel its client hears hand-offs on (see fairHandoffChannel). */
  readonly channels: string;
  /** What the channel of a client with sharded pub/sub begins with (see fairHandoffChannel). */
  readonly shardChannel: string;
  /** Redisson's RFairLock queue on the name, where rlock's waiters keep one place (see fair-queue.lua). */
  readonly redissonQueue: string;
  /** Redisson's RFairLock timeouts on the name: thread -> epoch ms after which Redisson drops it. */
  readonly redissonTimeouts: string;
  /** Where a Redisson release that reaches rlock's place in Redisson's queue is announced. */
  readonly redissonPlaceChannel: string;
}

/**
 * The fair lock shares the lock hash with Redisson (so both exclude each other) but keeps its
 * queue under keys of its own: its protocol differs from RFairLock's (server-time deadlines kept
 * alive by their clients, direct hand-off), and a Redisson client must not misread them.
 */
export function fairLockKeys(name: string, slot?: number): FairLockKeys {
  // Spelled out, as expirableSemaphoreKeys.
  const { lock, channel } = lockKeys(name, slot);
  return {
    lock,
    channel,
    queue: prefixName('rlock_fair_queue', name, slot),
    deadlines: prefixName('rlock_fair_deadlines', name, slot),
    marker: prefixName('rlock_fair_handoff', name, slot),
    channels: prefixName('rlock_fair_channels', name, slot),
    shardChannel: prefixName('rlock_fair__channel', name, slot),
    redissonQueue: prefixName('redisson_lock_queue', name, slot),
    redissonTimeouts: prefixName('redisson_lock_timeout', name, slot),
    // Redisson tells its queue's head on redisson_lock__channel:{name}:<thread>; rlock's place is
    // the thread 'rlock_fair' (see lua/include/fair-queue.lua).
    redissonPlaceChannel: `${channel}:rlock_fair`,
  };
}

/**
 * Where the client `clientId` hears the hand-offs of fair lock `keys`: its own channel (clientChannel),
 * subscribed for its lifetime; with sharded pub/sub, whose channels are bound to a slot, a channel
 * of its own in the lock's slot, subscribed while it has waiters there. A waiter's attempt keeps
 * it beside its place, so that a release tells only the client it hands the lock to.
 */
export function fairHandoffChannel(keys: FairLockKeys, clientId: string, sharded: boolean): string {
  return sharded ? `${keys.shardChannel}:${clientId}` : clientChannel(clientId);
}

/**
 * A channel of one client's own, subscribed for the client's lifetime: the subscriber connection
 * never leaves subscriber mode between two locks' subscriptions (ioredis would otherwise switch it
 * back and forth).
 */
export function clientChannel(clientId: string): string {
  return `rlock_client__channel:{${clientId}}`;
}

/** What a live client says about itself (host, process): see ClientRegistry. */
export function clientEntryKey(clientId: string): string {
  return `rlock_client:{${clientId}}`;
}

/**
 * Redisson's RedissonObject.suffixName (`{name}:suffix`, or `name:suffix` when the name has a
 * brace), kept in the slot of the name's key as prefixName keeps its keys; `slot`: see prefixName.
 */
export function suffixName(name: string, suffix: string, slot?: number): string {
  const natural = name.includes('{') ? `${name}:${suffix}` : `{${name}}:${suffix}`;
  const home = slot ?? hashSlot(name);
  if (hashSlot(natural) === home) return natural;
  return `{${tagForSlot(home)}}${name}:${suffix}`;
}

const REQUEST_LATCH_PREFIX = 'rlock_request_latch';

/**
 * The latch of one request to a semaphore or a count-down latch: a key that remembers the
 * request's answer so that a re-sent copy changes nothing (see lua/include/requests.lua).
 */
export function requestLatchKey(name: string, requestId: string, slot?: number): string {
  return `${prefixName(REQUEST_LATCH_PREFIX, name, slot)}:${requestId}`;
}

/** What every key of a request latch starts with (under an ioredis keyPrefix, after it). */
export const REQUEST_LATCH_KEY_START = `${REQUEST_LATCH_PREFIX}:`;

export interface SemaphoreKeys {
  /** The available permits: a string integer at the name (Redisson's RSemaphore). */
  readonly permits: string;
  /** Where releases announce the new count (Redisson's redisson_sc:{name}). */
  readonly channel: string;
}

export function semaphoreKeys(name: string, slot?: number): SemaphoreKeys {
  return { permits: name, channel: prefixName('redisson_sc', name, slot) };
}

export interface ExpirableSemaphoreKeys extends SemaphoreKeys {
  /** Sorted set of the permits out: id (16 bytes) -> epoch ms it expires (Redisson's {name}:timeout). */
  readonly timeouts: string;
}

export function expirableSemaphoreKeys(name: string, slot?: number): ExpirableSemaphoreKeys {
  // Spelled out: an object spread plus a property gives every result a hidden class of its own,
  // which makes each handle bigger and every read of its keys slower.
  const { permits, channel } = semaphoreKeys(name, slot);
  return { permits, channel, timeouts: suffixName(name, 'timeout', slot) };
}

/** Redisson's permit-expirable score for a permit without a lease. */
export const NEVER_EXPIRES = 922337203685477;

export interface CountDownLatchKeys {
  /** The count: a string integer at the name, deleted at zero (Redisson's RCountDownLatch). */
  readonly count: string;
  /** Redisson's redisson_countdownlatch__channel__{name}. */
  readonly channel: string;
}

export function countDownLatchKeys(name: string, slot?: number): CountDownLatchKeys {
  // Redisson wraps the name in braces whatever it holds; a name whose braces would move the
  // channel out of the latch's slot gets a tag chosen for that slot instead.
  const natural = `redisson_countdownlatch__channel__{${name}}`;
  const home = slot ?? hashSlot(name);
  const channel =
    hashSlot(natural) === home ? natural : `redisson_countdownlatch__channel__{${tagForSlot(home)}}${name}`;
  return { count: name, channel };
}

/** Redisson's latch messages: the count reached zero (waiters go), a new count was set. */
export const LATCH_ZERO_MESSAGE = '0';
export const LATCH_NEW_COUNT_MESSAGE = '1';

/** Redisson's message for "a read-write lock's writer is gone": wakes every waiter of a process. */
export const READ_UNLOCK_MESSAGE = '1';

/** The field of a read-write lock's hash that says who holds it: 'read' or 'write'. */
export const RW_MODE_FIELD = 'mode';

export interface ReadWriteLockKeys {
  /** The hash: mode, reader owner id -> read holds, `<owner id>:write` -> write holds. */
  readonly lock: string;
  /** Where releases are announced (Redisson's redisson_rwlock:{name}). */
  readonly channel: string;
  /**
   * What every read hold's timeout key starts with: `<prefix>:<owner id>:rwlock_timeout:<n>`
   * (Redisson writes it as the part of the first owner's timeout prefix before `:<owner id>`).
   */
  readonly timeoutBase: string;
  /** Zset: waiting writer field -> server time (ms) when its place lapses (writerPreference). */
  readonly writers: string;
  /** Present when the name prefers writers: a property of the name, shared by every rlock client. */
  readonly preference: string;
}

/** `slot`: see prefixName. */
export function readWriteLockKeys(name: string, slot?: number): ReadWriteLockKeys {
  const timeoutOf = suffixName(name, '\u0000', slot);
  return {
    lock: name,
    channel: prefixName('redisson_rwlock', name, slot),
    timeoutBase: timeoutOf.slice(0, timeoutOf.length - 2),
    writers: prefixName('rlock_rwlock_writers', name, slot),
    preference: prefixName('rlock_rwlock_writer_preference', name, slot),
  };
}

/** The prefix of the timeout keys of `owner`'s read holds: `<base>:<owner>:rwlock_timeout`. */
export function readTimeoutPrefix(keys: ReadWriteLockKeys, owner: string): string {
  return `${keys.timeoutBase}:${owner}:rwlock_timeout`;
}
