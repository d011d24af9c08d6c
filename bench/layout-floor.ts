/**
 * The least a lock in Redisson's layout can do while keeping the two reads rlock's guarantees need,
 * as two scripts: take (is the lock, or a withdrawal of this request, there? if not, the owner's
 * count and the request's mark in one HSET, and the lease) and free (the owner's count and the
 * mark, then DEL and Redisson's release message). No re-entry, no waiters, no window for re-sent
 * copies. `npm run bench:steps` times the scripts call by call; the uncontended scenario of
 * `npm run bench` runs them as a subject of its own, beside the libraries, so that each run shows
 * what the layout alone costs next to the fastest peer's string lock.
 */
import type Redis from 'ioredis';
import type { Release } from './adapters';

/** KEYS: lock, the request's latch. ARGV: owner, lease ms, the request's mark field. */
export const FLOOR_TAKE = `if redis.call('exists', KEYS[1], KEYS[2]) == 0 then
  redis.call('hset', KEYS[1], ARGV[1], 1, ARGV[3], 'a')
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0`;

/** KEYS: lock, its release channel. ARGV: owner, the request's mark field. */
export const FLOOR_FREE = `local hold = redis.call('hmget', KEYS[1], ARGV[1], ARGV[2])
if not hold[2] then return 0 end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`;

/**
 * The floor's lock on a connection: takes `key` (failing instead of waiting: it is measured
 * uncontended only) and resolves with its release.
 */
export function floorLock(redis: Redis): (key: string) => Promise<Release> {
  redis.defineCommand('floorTake', { lua: FLOOR_TAKE, numberOfKeys: 2 });
  redis.defineCommand('floorFree', { lua: FLOOR_FREE, numberOfKeys: 2 });
  const floor = redis as unknown as {
    floorTake(lock: string, latch: string, owner: string, leaseMs: number, mark: string): Promise<number>;
    floorFree(lock: string, channel: string, owner: string, mark: string): Promise<number>;
  };
  const owner = `${process.pid}:1`;
  let requests = 0;
  return async (key: string): Promise<Release> => {
    requests += 1;
    const mark = `mark:${owner}:${requests}`;
    if ((await floor.floorTake(key, `latch:{${key}}:${owner}:${requests}`, owner, 30_000, mark)) !== 1)
      throw new Error(`${key} is taken`);
    return async () => {
      await floor.floorFree(key, `redisson_lock__channel:{${key}}`, owner, mark);
    };
  };
}
