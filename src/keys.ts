import { hashSlot, hashTagOf, tagForSlot } from './slots';

/**
 * Every Redis key and channel name rlock uses, in one place.
 *
 * The layout is Redisson's, so a Java service on Redisson and a Node service on rlock exclude each
 * other on one name: the lock is a hash at the name itself; other keys carry the name as a hash tag
 * ({name}) so every key of one lock lives in the cluster slot of the name.
 */

/**
 * A key of lock `name` under `prefix`, always in the cluster slot of `name` itself.
 *
 * Redisson's RedissonObject.prefixName writes `prefix:{name}`, or `prefix:name` when the name has a
 * brace already; both are kept where they land in the name's slot, so the keys stay Redisson's for
 * every ordinary name. A name whose braces do not form a hash tag would scatter Redisson's keys over
 * other slots (CROSSSLOT on a cluster, Redisson issue #1098): `a{b` is wrapped whole (`prefix:{a{b}`),
 * and a name with a stray '}', which no hash tag can hold, gets a tag chosen for its slot.
 */
export function prefixName(prefix: string, name: string): string {
  if (hashTagOf(name) !== undefined) return `${prefix}:${name}`;
  if (!name.includes('}')) return `${prefix}:{${name}}`;
  return `${prefix}:{${tagForSlot(hashSlot(name))}}${name}`;
}

/** Redisson's message for "an exclusive lock was released": wakes one waiter per process. */
export const UNLOCK_MESSAGE = '0';

export interface LockKeys {
  /** The lock hash: field owner id -> hold count. */
  readonly lock: string;
  /** Where releases are announced (Redisson's redisson_lock__channel). */
  readonly channel: string;
}

export function lockKeys(name: string): LockKeys {
  return { lock: name, channel: prefixName('redisson_lock__channel', name) };
}

/** The latch that makes one acquire or release request of lock `name` take effect once. */
export function holdLatchKey(name: string, requestId: string): string {
  return `${prefixName('rlock_hold_latch', name)}:${requestId}`;
}

/** The fenced lock's token counter (Redisson RFencedLock's redisson_lock_token:{name}). */
export function fencingTokenKey(name: string): string {
  return prefixName('redisson_lock_token', name);
}

export interface FairLockKeys extends LockKeys {
  /** List of waiting owner ids in arrival order. */
  readonly queue: string;
  /** Zset owner id -> server time (ms) when its place expires unless refreshed. */
  readonly deadlines: string;
  /** The owner a release handed the lock to, until it confirms. */
  readonly marker: string;
  /** Where hand-offs are announced when notifications are sharded. */
  readonly handoffChannel: string;
}

/**
 * The fair lock shares the lock hash with Redisson (so both exclude each other) but keeps its
 * queue under keys of its own: its protocol differs from RFairLock's (server-time deadlines kept
 * alive by their clients, direct hand-off), and a Redisson client must not misread them.
 */
export function fairLockKeys(name: string): FairLockKeys {
  return {
    ...lockKeys(name),
    queue: prefixName('rlock_fair_queue', name),
    deadlines: prefixName('rlock_fair_deadlines', name),
    marker: prefixName('rlock_fair_handoff', name),
    handoffChannel: prefixName('rlock_fair__channel', name),
  };
}

/**
 * A channel of one client's own. It keeps the subscriber connection in subscribed mode, and the
 * fair lock sends its hand-offs there: no subscription per wait, and only the next owner's client
 * hears of a release.
 */
export function clientChannel(clientId: string): string {
  return `rlock_client__channel:{${clientId}}`;
}
