import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { deployment } from './deployment';

/**
 * A Java service on Redisson, played by raw commands doing what Redisson's RReadWriteLock does to
 * Redis: the hash at the name with mode, `<uuid>:<threadId>` read counts and a
 * `<uuid>:<threadId>:write` write count; a `{name}:<uuid>:<threadId>:rwlock_timeout:<n>` key per
 * read hold; '0' on redisson_rwlock:{name} when the last reader goes, '1' when the writer goes.
 */
/** Redisson publishes on shard channels where the cluster has them, as rlock does. */
const PUBLISH = deployment === 'cluster' ? 'spublish' : 'publish';

export class JavaReadWriteLock {
  private readonly owner = `${randomUUID()}:1`;

  constructor(
    private readonly redis: Redis,
    private readonly name: string,
  ) {}

  async readLock(leaseMs = 30_000): Promise<boolean> {
    const taken = await this.redis.eval(
      `local mode = redis.call('hget', KEYS[1], 'mode')
       if mode == false or mode == 'read' or redis.call('hexists', KEYS[1], ARGV[2] .. ':write') == 1 then
         if mode == false then redis.call('hset', KEYS[1], 'mode', 'read') end
         local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
         redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
         redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
         return 1
       end
       return 0`,
      2,
      this.name,
      `{${this.name}}:${this.owner}:rwlock_timeout`,
      leaseMs,
      this.owner,
    );
    return taken === 1;
  }

  async readUnlock(): Promise<void> {
    await this.redis.eval(
      `local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
       if n == 0 then redis.call('hdel', KEYS[1], ARGV[1]) end
       redis.call('del', KEYS[3] .. ':' .. ARGV[1] .. ':rwlock_timeout:' .. (n + 1))
       local longest = -3
       for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
         local count = tonumber(redis.call('hget', KEYS[1], field))
         if type(count) == 'number' then
           for i = count, 1, -1 do
             longest = math.max(longest, redis.call('pttl', KEYS[3] .. ':' .. field .. ':rwlock_timeout:' .. i))
           end
         end
       end
       if longest > 0 then redis.call('pexpire', KEYS[1], longest) return 0 end
       if redis.call('hget', KEYS[1], 'mode') == 'write' then return 0 end
       redis.call('del', KEYS[1]) redis.call(ARGV[2], KEYS[2], '0') return 1`,
      3,
      this.name,
      `redisson_rwlock:{${this.name}}`,
      `{${this.name}}`,
      this.owner,
      PUBLISH,
    );
  }

  async writeLock(leaseMs = 30_000): Promise<boolean> {
    const taken = await this.redis.eval(
      `local mode = redis.call('hget', KEYS[1], 'mode')
       if mode == false then
         redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1) redis.call('pexpire', KEYS[1], ARGV[1]) return 1
       end
       if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
         redis.call('hincrby', KEYS[1], ARGV[2], 1) return 1
       end
       return 0`,
      1,
      this.name,
      leaseMs,
      `${this.owner}:write`,
    );
    return taken === 1;
  }

  async writeUnlock(): Promise<void> {
    await this.redis.eval(
      `if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then return 0 end
       redis.call('hdel', KEYS[1], ARGV[1])
       if redis.call('hlen', KEYS[1]) == 1 then
         redis.call('del', KEYS[1]) redis.call(ARGV[2], KEYS[2], '1')
       else
         redis.call('hset', KEYS[1], 'mode', 'read')
       end
       return 1`,
      2,
      this.name,
      `redisson_rwlock:{${this.name}}`,
      `${this.owner}:write`,
      PUBLISH,
    );
  }
}
