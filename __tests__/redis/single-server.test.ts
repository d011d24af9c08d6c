import { LockClient } from '../../src';
import { SingleLink } from '../../src/waiting/pubsub/links';
import { startRedis } from '../helpers/redis-server';
import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

/**
 * Behaviour proven with a hand on one server's connections — a subscriber whose SUBSCRIBE arrives
 * late, a reply lost in a proxy, a restart that loses the data. The cluster project runs the
 * other test files against a Redis Cluster; these stay on one standalone server.
 */
describe('on one server', () => {
  const redis = useRedis();

  test('a release between the failed attempt and the subscription is not missed', async () => {
    const server = redis.server();
    const slowSubscriber = server.connect();
    const realSubscribe = slowSubscriber.subscribe.bind(slowSubscriber);
    // Every SUBSCRIBE reaches Redis 300 ms late: the holder releases in that gap.
    slowSubscriber.subscribe = ((...channels: string[]) =>
      sleep(300).then(() => realSubscribe(...channels))) as typeof slowSubscriber.subscribe;
    const holder = redis.client();
    const waiter = redis.client({ subscriber: slowSubscriber });
    const held = holder.getLock('gap');
    await held.lock();
    const started = performance.now();
    const waiting = waiter.getLock('gap').tryLock(10_000);
    await sleep(100);
    await held.unlock();
    expect(await waiting).toBe(true);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  test('tokens never go backwards after a restart that lost the counter', async () => {
    const server = await startRedis();
    const client = new LockClient(server.connect({ maxRetriesPerRequest: 20 }));
    try {
      const lock = client.getFencedLock('fenced-restart');
      const before = await lock.lockAndGetToken(10_000);
      await server.restart();
      const after = await client.getFencedLock('fenced-restart').lockAndGetToken(10_000);
      expect(after).toBeGreaterThan(before);
    } finally {
      await client.close();
      await server.stop();
    }
  });

  test('an acquire re-sent after a lost reply counts once and hands out one token', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const lock = client.getFencedLock('fenced-resent');
    const token = await proxy.loseReplyOf(() => lock.lockAndGetToken());
    expect(await lock.getHoldCount()).toBe(1);
    expect(await lock.getToken()).toBe(token);
  });

  test('a SUBSCRIBE asked for while the connection sets itself up waits for it (the ready check would fail)', async () => {
    const server = redis.server();
    const connection = server.connect({ lazyConnect: true }); // ioredis' ready check is on
    const errors: string[] = [];
    connection.on('error', (error: Error) => errors.push(error.message));
    const messages: string[] = [];
    const link = new SingleLink(connection, false, false, {
      message: (_channel, message) => messages.push(message),
      resubscribed: () => undefined,
      dropped: () => undefined,
    });
    let subscribed: Promise<unknown> | undefined;
    connection.once('connect', () => (subscribed = link.subscribe('setting-up')));
    await connection.connect();
    await subscribed;
    await redis.admin().publish('setting-up', 'hello');
    await sleep(100);
    expect(messages).toEqual(['hello']);
    expect(errors).toEqual([]);
    await link.close();
  });
});
