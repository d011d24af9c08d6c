import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

/**
 * A Java service on Redisson and a Node service on rlock must exclude each other on one name.
 * No JVM here, so the Java side is played by raw commands doing what Redisson's RLock does to
 * Redis: a hash at the name with field <uuid>:<threadId>, a pexpire'd lease, and a '0' published
 * on redisson_lock__channel:{name} when the last hold goes.
 */
class JavaSide {
  private readonly field = `${randomUUID()}:1`;

  constructor(private readonly redis: Redis) {}

  async tryLock(name: string, leaseMs = 30_000): Promise<boolean> {
    const taken = await this.redis.eval(
      `if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
         redis.call('hincrby', KEYS[1], ARGV[2], 1) redis.call('pexpire', KEYS[1], ARGV[1]) return 1 end
       return 0`,
      1,
      name,
      leaseMs,
      this.field,
    );
    return taken === 1;
  }

  async unlock(name: string): Promise<void> {
    await this.redis.eval(
      `if redis.call('hincrby', KEYS[1], ARGV[1], -1) <= 0 then
         redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], '0') end`,
      2,
      name,
      `redisson_lock__channel:{${name}}`,
      this.field,
    );
  }
}

describe('Redisson layout', () => {
  const redis = useRedis();

  test('a lock held by a Redisson client excludes rlock, and its release wakes the rlock waiter', async () => {
    const java = new JavaSide(redis.admin());
    expect(await java.tryLock('orders:42')).toBe(true);
    const lock = redis.client().getLock('orders:42');
    expect(await lock.tryLock()).toBe(false);
    const waiting = lock.tryLock(10_000);
    await sleep(200);
    const releasedAt = performance.now();
    await java.unlock('orders:42');
    expect(await waiting).toBe(true);
    expect(performance.now() - releasedAt).toBeLessThan(1_000);
  });

  test('a lock held by rlock excludes a Redisson client, and rlock announces its release the Redisson way', async () => {
    const java = new JavaSide(redis.admin());
    const listener = redis.server().connect();
    const messages: Array<[string, string]> = [];
    listener.on('message', (channel: string, message: string) => messages.push([channel, message]));
    await listener.subscribe('redisson_lock__channel:{orders:7}');
    const lock = redis.client().getLock('orders:7');
    await lock.lock();
    expect(await java.tryLock('orders:7')).toBe(false);
    await lock.unlock();
    await sleep(100);
    expect(messages).toEqual([['redisson_lock__channel:{orders:7}', '0']]);
    expect(await java.tryLock('orders:7')).toBe(true);
  });

  test('a name that carries braces keeps them, as Redisson does', async () => {
    const listener = redis.server().connect();
    const channels: string[] = [];
    listener.on('message', (channel: string) => channels.push(channel));
    await listener.subscribe('redisson_lock__channel:{tenant-1}:orders');
    const lock = redis.client().getLock('{tenant-1}:orders');
    await lock.lock();
    await lock.unlock();
    await sleep(100);
    expect(channels).toEqual(['redisson_lock__channel:{tenant-1}:orders']);
  });
});
