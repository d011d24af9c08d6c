import { isHoldMark, prefixName, REQUEST_LATCH_KEY_START, RW_MODE_FIELD } from '../protocol/keys';
import type { Connection } from './connect';
import { isCluster } from './state';

/**
 * `rlock list [pattern]`: the names under which locks, fair queues, fencing counters and
 * synchronizers live. It walks the keyspace with SCAN on every master (KEYS would stop a busy
 * server) and reads only the keys that match.
 */
export interface Listed {
  name: string;
  kinds: string[];
  /** Owners holding a lock hash. */
  holders?: number;
  /** Waiters in the fair queue. */
  waiters?: number;
  /** The integer at the name (semaphore permits, a latch's count, or any counter). */
  value?: number;
  /** Expirable permits out. */
  permitsOut?: number;
  /** ttl of the lock hash or counter in ms (-1: none). */
  ttlMs?: number;
}

/** The lock name behind a derived key `prefix:…` (as protocol/keys.ts names them), when it is one. */
function nameBehind(key: string, prefix: string): string | undefined {
  if (!key.startsWith(`${prefix}:`)) return undefined;
  const rest = key.slice(prefix.length + 1);
  const tagged = /^\{([^{}]*)\}(.*)$/.exec(rest);
  // `prefix:{name}` for most names; `prefix:name` for a name with a hash tag of its own;
  // `prefix:{tag}name` when a tag had to be chosen. The most common reading that fits wins.
  const candidates = [tagged && tagged[2] === '' ? tagged[1] : undefined, rest, tagged?.[2]];
  return candidates.find((candidate) => candidate && prefixName(prefix, candidate) === key) ?? rest;
}

/** Redisson's `{name}:timeout` of a permit-expirable semaphore, back to the name. */
function semaphoreBehind(key: string): string | undefined {
  if (!key.endsWith(':timeout')) return undefined;
  const base = key.slice(0, -':timeout'.length);
  const braced = /^\{([^{}]*)\}$/.exec(base);
  return braced ? braced[1] : base.includes('{') ? base : undefined;
}

/** Kinds in the order a listing names them: the lock first, then what goes with it. */
const KIND_ORDER = ['lock', 'read-write lock', 'fair queue', 'fencing counter', 'permit-expirable semaphore'];

function kindRank(kind: string): number {
  const rank = KIND_ORDER.indexOf(kind);
  return rank < 0 ? KIND_ORDER.length : rank;
}

/** Keys rlock writes beside the lock's, never listed as names of their own. */
const SIDE_KEYS = [
  'rlock_hold_latch:',
  REQUEST_LATCH_KEY_START,
  'rlock_client:',
  'rlock_fair_deadlines:',
  'rlock_fair_handoff:',
  'rlock_rwlock_writers:',
  'rlock_rwlock_writer_preference:',
];

/** A read-write lock's read-hold timeout key (`{name}:<owner id>:rwlock_timeout:<n>`), Redisson's. */
const READ_TIMEOUT_KEY = /:rwlock_timeout:\d+$/;

/** Every stored key under the prefix, from every master, in one SCAN walk each. */
async function scanAll(redis: Connection, keyPrefix: string): Promise<string[]> {
  const nodes = isCluster(redis) ? redis.nodes('master') : [redis];
  const found = new Set<string>();
  // One master at a time: a listing is an operator's tool, not worth loading a cluster for.
  for (const node of nodes) {
    let cursor = '0';
    do {
      // SCAN sees stored keys, prefix included (ioredis does not add it to a pattern).
      const [next, keys] = await node.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) found.add(key.slice(keyPrefix.length));
    } while (cursor !== '0');
  }
  return [...found];
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

export interface Listing {
  locks: Listed[];
  /**
   * Further key prefixes (an ioredis keyPrefix) under which rlock clients announce themselves:
   * their locks are read with --key-prefix <prefix>, and are not in `locks`.
   */
  otherPrefixes: string[];
}

const CLIENT_ENTRY = 'rlock_client:{';

/** The prefixes before client entries (`<prefix>rlock_client:{<id>}`) that are not this listing's. */
function otherPrefixesIn(keys: string[]): string[] {
  const prefixes = new Set<string>();
  for (const key of keys) {
    const at = key.indexOf(CLIENT_ENTRY);
    if (at > 0) prefixes.add(key.slice(0, at));
  }
  return [...prefixes].sort();
}

export async function list(
  redis: Connection,
  pattern: string,
  keyPrefix: string,
  count: number,
): Promise<Listing> {
  // One walk over every key: a fair queue or a counter is listed under its lock's name, which the
  // pattern matches, though its own key does not.
  const keys = await scanAll(redis, keyPrefix);
  const byName = new Map<string, Listed>();
  const entry = (name: string): Listed => {
    let listed = byName.get(name);
    if (!listed) byName.set(name, (listed = { name, kinds: [] }));
    return listed;
  };
  const matches = globMatcher(pattern);
  await eachLimited(keys, 16, async (key) => {
    if (SIDE_KEYS.some((side) => key.startsWith(side)) || READ_TIMEOUT_KEY.test(key)) return;
    const queueOf = nameBehind(key, 'rlock_fair_queue');
    if (queueOf !== undefined) {
      if (matches(queueOf)) {
        const listed = entry(queueOf);
        listed.kinds.push('fair queue');
        listed.waiters = await redis.llen(key);
      }
      return;
    }
    const tokenOf = nameBehind(key, 'redisson_lock_token');
    if (tokenOf !== undefined) {
      if (matches(tokenOf)) entry(tokenOf).kinds.push('fencing counter');
      return;
    }
    const semaphoreOf = semaphoreBehind(key);
    if (semaphoreOf !== undefined && (await redis.type(key)) === 'zset') {
      if (matches(semaphoreOf)) {
        const listed = entry(semaphoreOf);
        listed.kinds.push('permit-expirable semaphore');
        listed.permitsOut = await redis.zcard(key);
      }
      return;
    }
    if (!matches(key)) return;
    await describeKey(redis, key, entry);
  });
  const locks = [...byName.values()]
    .filter((listed) => listed.kinds.length > 0)
    .map((listed) => ({ ...listed, kinds: listed.kinds.sort((a, b) => kindRank(a) - kindRank(b)) }))
    .sort((a, b) => a.name.localeCompare(b.name))
    .slice(0, count);
  return { locks, otherPrefixes: otherPrefixesIn(keys) };
}

/** A key the pattern named: a lock hash, a counter, or something that is not rlock's. */
async function describeKey(redis: Connection, key: string, entry: (name: string) => Listed): Promise<void> {
  const type = await redis.type(key);
  if (type === 'hash') {
    const fields = await lockHashFields(redis, key);
    if (fields === undefined) return;
    const owners = Object.keys(fields).filter((field) => field !== RW_MODE_FIELD && !isHoldMark(field));
    // Some sign that rlock or Redisson wrote it: a generated owner id (`<id>:<n>`), a hold's mark
    // (rlock marks every hold it takes, an explicit owner id's too), or a read-write lock's mode.
    const lockLike =
      owners.length > 0 &&
      (fields[RW_MODE_FIELD] !== undefined ||
        Object.keys(fields).some(isHoldMark) ||
        owners.some((owner) => /:\d+(:write)?$/.test(owner)));
    if (!lockLike) return;
    const listed = entry(key);
    listed.kinds.push(fields[RW_MODE_FIELD] ? 'read-write lock' : 'lock');
    listed.holders = owners.length;
    listed.ttlMs = await redis.pttl(key);
  } else if (type === 'string') {
    const value = await redis.get(key);
    if (value === null || !/^-?\d+$/.test(value)) return;
    const listed = entry(key);
    listed.kinds.push('semaphore or count-down latch (an integer)');
    listed.value = Number(value);
    listed.ttlMs = await redis.pttl(key);
  }
}

/**
 * The fields of a hash that may be a lock, read page by page; undefined at the first field a lock
 * hash cannot have (only owners with a hold count, hold marks and a read-write lock's mode), so a
 * large hash of something else costs a page, while a lock with many holders is read whole.
 */
async function lockHashFields(redis: Connection, key: string): Promise<Record<string, string> | undefined> {
  const fields: Record<string, string> = {};
  let cursor = '0';
  do {
    const [next, page] = await redis.hscan(key, cursor, 'COUNT', 256);
    for (let i = 0; i + 1 < page.length; i += 2) {
      const field = page[i] as string;
      const value = page[i + 1] as string;
      const fits =
        field === RW_MODE_FIELD
          ? value === 'read' || value === 'write'
          : isHoldMark(field) || /^[1-9]\d*$/.test(value);
      if (!fits) return undefined;
      fields[field] = value;
    }
    cursor = next;
  } while (cursor !== '0');
  return fields;
}

/** Redis' glob (`*`, `?`, `[…]`, `\\` escapes) as a test on names. */
function globMatcher(pattern: string): (name: string) => boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const char = pattern[i] as string;
    if (char === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern[(i += 1)] as string);
    else if (char === '*') source += '[\\s\\S]*';
    else if (char === '?') source += '[\\s\\S]';
    else if (char === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) source += '\\[';
      else {
        const body = pattern.slice(i + 1, end);
        source += `[${body.startsWith('^') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else source += escapeRegExp(char);
  }
  const regexp = new RegExp(`^${source}$`);
  return (name) => regexp.test(name);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The text view of a listing. */
export function describeListing(listed: Listed[]): string {
  if (listed.length === 0) return 'nothing found';
  const rows = listed.map((item) => {
    const facts = [
      item.holders !== undefined && `${item.holders} holder${item.holders === 1 ? '' : 's'}`,
      item.waiters !== undefined && `${item.waiters} waiting`,
      item.value !== undefined && `value ${item.value}`,
      item.permitsOut !== undefined && `${item.permitsOut} permits out`,
      item.ttlMs !== undefined && item.ttlMs >= 0 && `ttl ${(item.ttlMs / 1000).toFixed(1)} s`,
    ].filter(Boolean);
    return [item.name, item.kinds.join(', '), facts.join(', ')];
  });
  const width = (column: number): number => Math.max(...rows.map((row) => (row[column] as string).length));
  const [nameWidth, kindWidth] = [width(0), width(1)];
  return rows
    .map(([name, kinds, facts]) =>
      `${(name as string).padEnd(nameWidth)}  ${(kinds as string).padEnd(kindWidth)}  ${facts}`.trimEnd(),
    )
    .join('\n');
}
