import { useRedis } from './helpers/setup';

/**
 * ioredis re-sends a command whose reply a reconnect lost. Redisson's scripts would add a permit or
 * count down twice; rlock's request latches make the copy answer as the first run did.
 */
describe('semaphore and latch commands re-sent after a reconnect', () => {
  const redis = useRedis();

  test('the proxy really makes a count change twice (negative control: a latch-less INCRBY)', async () => {
    const { proxy } = await redis.clientThroughProxy();
    const connection = redis.server().connect({ port: proxy.port });
    await connection.ping();
    await proxy.loseReplyOf(() => connection.incrby('naive-permits', 1));
    expect(await redis.admin().get('naive-permits')).toBe('2');
  });

  test('a release and an addPermits whose replies were lost add their permits once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const semaphore = client.getSemaphore('resent:release');
    await semaphore.trySetPermits(0);
    await proxy.loseReplyOf(() => semaphore.release(2));
    expect(await semaphore.availablePermits()).toBe(2);
    await proxy.loseReplyOf(() => semaphore.addPermits(3));
    expect(await semaphore.availablePermits()).toBe(5);
  });

  test('an acquire and a drain whose replies were lost take their permits once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const semaphore = client.getSemaphore('resent:acquire');
    await semaphore.trySetPermits(5);
    await proxy.loseReplyOf(() => semaphore.acquire(2));
    expect(await semaphore.availablePermits()).toBe(3);
    expect(await proxy.loseReplyOf(() => semaphore.drainPermits())).toBe(3);
    await semaphore.release(1);
    expect(await semaphore.availablePermits()).toBe(1);
  });

  test('a countDown whose reply was lost counts down once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const latch = client.getCountDownLatch('resent:latch');
    await latch.trySetCount(3);
    await proxy.loseReplyOf(() => latch.countDown());
    expect(await latch.getCount()).toBe(2);
    expect(await proxy.loseReplyOf(() => latch.trySetCount(9))).toBe(false);
  });

  test('expirable permits: a lost acquire takes one permit, a lost release neither fails nor adds two', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const semaphore = client.getPermitExpirableSemaphore('resent:pes');
    expect(await proxy.loseReplyOf(() => semaphore.trySetPermits(2))).toBe(true);
    const id = await proxy.loseReplyOf(() => semaphore.acquire());
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await redis.admin().zcard('{resent:pes}:timeout')).toBe(1);
    await proxy.loseReplyOf(() => semaphore.release(id));
    expect(await semaphore.availablePermits()).toBe(2);
    await proxy.loseReplyOf(() => semaphore.addPermits(1));
    expect(await semaphore.availablePermits()).toBe(3);
  });
});
