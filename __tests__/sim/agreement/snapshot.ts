import type Redis from 'ioredis';
import { formatScore, sortedMembers } from '../redis/commands';
import { fromBytes, toBytes } from '../redis/bytes';
import type { SimRedis } from '../redis/server';

/**
 * One key as a reader sees it, on either server: its type, its value in a canonical text, and its
 * remaining ttl in ms (-1: none, -2: absent). The agreement test compares these.
 */
export interface KeyState {
  type: string;
  value: string;
  ttl: number;
}

export async function realKey(redis: Redis, key: string): Promise<KeyState> {
  const state = await readRealKey(redis, key);
  // A key whose ttl ran out between two of these reads is gone: it is read as gone, not as a value
  // without a ttl, or the ttl of nothing.
  if (state.type !== 'none' && (await redis.pttl(key)) === -2) return { type: 'none', value: '', ttl: -2 };
  return state;
}

async function readRealKey(redis: Redis, key: string): Promise<KeyState> {
  const type = await redis.type(key);
  const ttl = await redis.pttl(key);
  if (ttl === -2) return { type: 'none', value: '', ttl: -2 };
  switch (type) {
    case 'none':
      return { type: 'none', value: '', ttl: -2 };
    case 'string':
      return { type, value: (await redis.get(key)) ?? '', ttl };
    case 'hash':
      return { type, value: canonicalPairs(Object.entries(await redis.hgetall(key))), ttl };
    case 'list':
      return { type, value: JSON.stringify(await redis.lrange(key, 0, -1)), ttl };
    case 'zset':
      return { type, value: JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES')), ttl };
    default:
      return { type, value: '?', ttl };
  }
}

/** The simulated server's key, read as ioredis reads a reply: its bytes as UTF-8. */
export function simKey(server: SimRedis, name: string): KeyState {
  const { store } = server;
  const key = toBytes(name);
  const data = store.peek(key);
  if (!data) return { type: 'none', value: '', ttl: -2 };
  const at = store.expiresAt(key);
  const ttl = at === undefined ? -1 : Math.max(0, at - server.nowMs());
  switch (data.type) {
    case 'string':
      return { type: 'string', value: fromBytes(data.value), ttl };
    case 'hash': {
      const pairs = [...data.value].map(([field, value]): [string, string] => [
        fromBytes(field),
        fromBytes(value),
      ]);
      return { type: 'hash', value: canonicalPairs(pairs), ttl };
    }
    case 'list':
      return { type: 'list', value: JSON.stringify(data.value.map(fromBytes)), ttl };
    case 'zset': {
      const entries = sortedMembers(data.value).flatMap(([member, score]) => [
        fromBytes(member),
        formatScore(score),
      ]);
      return { type: 'zset', value: JSON.stringify(entries), ttl };
    }
  }
}

/** A hash's fields sorted: Redis' hash order is an encoding detail no script depends on. */
function canonicalPairs(pairs: Array<[string, string]>): string {
  return JSON.stringify([...pairs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
