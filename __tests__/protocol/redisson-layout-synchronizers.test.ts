import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { useRedis } from '../helpers/setup';
import { sleep, timed } from '../helpers/wait';

/**
 * A Java service on Redisson and a Node service on rlock must share semaphores and latches by
 * name. No JVM here: the Java side is played by raw commands doing what Redisson's RSemaphore,
 * RPermitExpirableSemaphore and RCountDownLatch do to Redis (the count at the name; permits out in
 * {name}:timeout as 16 raw bytes scored by expiry epoch ms; the new count published on
 * redisson_sc:{name}; 0 on redisson_countdownlatch__channel__{name} when a latch reaches zero).
 */
class JavaSide {
  constructor(private readonly redis: Redis) {}

  async semaphoreTryAcquire(name: string, permits = 1): Promise<boolean> {
    const taken = await this.redis.eval(
      `local v = redis.call('get', KEYS[1])
       if v ~= false and tonumber(v) >= tonumber(ARGV[1]) then redis.call('decrby', KEYS[1], ARGV[1]) return 1 end
       return 0`,
      1,
      name,
      permits,
    );
    return taken === 1;
  }

  async semaphoreRelease(name: string, permits = 1): Promise<void> {
    await this.redis.eval(
      `local v = redis.call('incrby', KEYS[1], ARGV[1]) redis.call('publish', KEYS[2], v)`,
      2,
      name,
      `redisson_sc:{${name}}`,
      permits,
    );
  }

  /** Redisson's permit-expirable acquire of one permit: the id as 16 raw bytes. */
  async expirableTryAcquire(name: string, leaseMs: number): Promise<string | null> {
    const id = randomBytes(16);
    const taken = await this.redis.eval(
      `local v = redis.call('get', KEYS[1])
       if v ~= false and tonumber(v) >= 1 then
         redis.call('decrby', KEYS[1], 1) redis.call('zadd', KEYS[2], ARGV[1], ARGV[2]) return 1 end
       return 0`,
      2,
      name,
      `{${name}}:timeout`,
      Date.now() + leaseMs,
      id,
    );
    return taken === 1 ? id.toString('hex') : null;
  }

  async expirableRelease(name: string, id: string): Promise<boolean> {
    const released = await this.redis.eval(
      `if redis.call('zrem', KEYS[3], ARGV[1]) ~= 1 then return 0 end
       local v = redis.call('incrby', KEYS[1], 1) redis.call('publish', KEYS[2], v) return 1`,
      3,
      name,
      `redisson_sc:{${name}}`,
      `{${name}}:timeout`,
      Buffer.from(id, 'hex'),
    );
    return released === 1;
  }

  async countDown(name: string): Promise<void> {
    await this.redis.eval(
      `local v = redis.call('decr', KEYS[1])
       if v <= 0 then redis.call('del', KEYS[1]) end
       if v == 0 then redis.call('publish', KEYS[2], ARGV[1]) end`,
      2,
      name,
      `redisson_countdownlatch__channel__{${name}}`,
      '0',
    );
  }
}

describe('Redisson layout: semaphores and latches', () => {
  const redis = useRedis();

  async function listen(channel: string): Promise<string[]> {
    const listener = redis.server().connect();
    const messages: string[] = [];
    listener.on('message', (_channel: string, message: string) => messages.push(message));
    await listener.subscribe(channel);
    return messages;
  }

  test('semaphore: a Redisson release wakes an rlock waiter; rlock announces its count the Redisson way', async () => {
    const java = new JavaSide(redis.admin());
    const semaphore = redis.client().getSemaphore('rs:sem');
    await semaphore.trySetPermits(1);
    expect(await java.semaphoreTryAcquire('rs:sem')).toBe(true);
    const waiting = timed(semaphore.tryAcquire(1, 10_000));
    await sleep(300);
    await java.semaphoreRelease('rs:sem');
    const result = await waiting;
    expect(result.value).toBe(true);
    expect(result.ms).toBeLessThan(3_000);
    expect(await java.semaphoreTryAcquire('rs:sem')).toBe(false);

    const messages = await listen('redisson_sc:{rs:sem}');
    await semaphore.release(1);
    await sleep(100);
    expect(messages).toEqual(['1']);
    expect(await java.semaphoreTryAcquire('rs:sem')).toBe(true);
  });

  test('permit-expirable semaphore: permits are shared both ways by their hex ids', async () => {
    const java = new JavaSide(redis.admin());
    const semaphore = redis.client().getPermitExpirableSemaphore('rs:pes');
    await semaphore.trySetPermits(2);
    const javaId = await java.expirableTryAcquire('rs:pes', 60_000);
    expect(javaId).toMatch(/^[0-9a-f]{32}$/);
    const nodeId = await semaphore.acquire({ leaseTime: 60_000 });
    expect(await java.expirableTryAcquire('rs:pes', 60_000)).toBeNull();
    // A permit Java took can be released by its id from Node, and the other way round.
    expect(await java.expirableRelease('rs:pes', nodeId)).toBe(true);
    await semaphore.release(javaId as string);
    expect(await semaphore.availablePermits()).toBe(2);
  });

  test('permit-expirable semaphore: a Redisson permit past its expiry returns to rlock by itself', async () => {
    const java = new JavaSide(redis.admin());
    const semaphore = redis.client().getPermitExpirableSemaphore('rs:pes-expiry');
    await semaphore.trySetPermits(1);
    await java.expirableTryAcquire('rs:pes-expiry', 500);
    const result = await timed(semaphore.tryAcquire({ waitTime: 10_000 }));
    expect(result.value).toMatch(/^[0-9a-f]{32}$/);
    expect(result.ms).toBeLessThan(3_000);
  });

  test('latch: a Redisson countDown to zero opens rlock awaits; rlock sends Redisson its zero message', async () => {
    const java = new JavaSide(redis.admin());
    const latch = redis.client().getCountDownLatch('rs:latch');
    await latch.trySetCount(1);
    const waiting = timed(latch.await({ waitTime: 10_000 }));
    await sleep(300);
    await java.countDown('rs:latch');
    const result = await waiting;
    expect(result.value).toBe(true);
    expect(result.ms).toBeLessThan(3_000);

    const messages = await listen('redisson_countdownlatch__channel__{rs:latch}');
    await latch.trySetCount(2);
    await latch.countDown();
    await java.countDown('rs:latch');
    await sleep(100);
    // Redisson's new-count message when set, its zero message when opened; the key is gone.
    expect(messages).toEqual(['1', '0']);
    expect(await redis.admin().exists('rs:latch')).toBe(0);
  });
});
