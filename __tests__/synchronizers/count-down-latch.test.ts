import { ClientClosedError } from '../../src';
import { countDownLatchKeys } from '../../src/protocol/keys';
import { useRedis } from '../helpers/setup';
import { sleep, timed } from '../helpers/wait';

// The scenarios of Redisson's RedissonCountDownLatchTest, in milliseconds and Promises.
describe('RCountDownLatch', () => {
  const redis = useRedis();

  test('trySetCount sets a count once; countDown to zero deletes the key', async () => {
    const latch = redis.client().getCountDownLatch('latch:basic');
    expect(await latch.getCount()).toBe(0);
    expect(await latch.trySetCount(2)).toBe(true);
    expect(await latch.trySetCount(5)).toBe(false);
    expect(await redis.admin().get('latch:basic')).toBe('2');
    await latch.countDown();
    expect(await latch.getCount()).toBe(1);
    await latch.countDown();
    expect(await latch.getCount()).toBe(0);
    expect(await redis.admin().exists('latch:basic')).toBe(0);
    await latch.countDown();
    expect(await latch.getCount()).toBe(0);
    expect(await latch.trySetCount(1)).toBe(true);
  });

  test('await returns at once when open, and wakes every waiter when the count reaches zero', async () => {
    const latch = redis.client().getCountDownLatch('latch:wake');
    expect(await latch.await({ waitTime: 0 })).toBe(true);
    await latch.trySetCount(2);
    const waiters = [redis.client(), redis.client()].map((client) =>
      timed(client.getCountDownLatch('latch:wake').await({ waitTime: 20_000 })),
    );
    await sleep(300);
    await redis.resetStats();
    await latch.countDown();
    await sleep(500);
    await latch.countDown();
    const results = await Promise.all(waiters);
    expect(results.map((result) => result.value)).toEqual([true, true]);
    for (const result of results) expect(result.ms).toBeLessThan(5_000);
    // Woken by the message, not by polling: each waiter read the count a handful of times at most.
    expect(await redis.commandCalls('get')).toBeLessThan(10);
  });

  test('await gives up after waitTime; delete opens the latch', async () => {
    const latch = redis.client().getCountDownLatch('latch:timeout');
    await latch.trySetCount(1);
    const result = await timed(latch.await({ waitTime: 300 }));
    expect(result.value).toBe(false);
    expect(result.ms).toBeLessThan(2_000);
    const waiting = latch.await({ waitTime: 10_000 });
    await sleep(200);
    expect(await latch.delete()).toBe(true);
    expect(await waiting).toBe(true);
    expect(await latch.delete()).toBe(false);
  });

  test('an aborted await rejects with the reason; close() ends awaits', async () => {
    const client = redis.client();
    const latch = client.getCountDownLatch('latch:abort');
    await latch.trySetCount(1);
    const controller = new AbortController();
    const waiting = latch.await({ signal: controller.signal });
    await sleep(100);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    const forever = latch.await();
    await sleep(100);
    await client.close();
    await expect(forever).rejects.toBeInstanceOf(ClientClosedError);
  });

  test('bad input is refused with errors naming the argument', async () => {
    const latch = redis.client().getCountDownLatch('latch:bad');
    await expect(latch.trySetCount(0)).rejects.toThrow(/count/);
    await expect(latch.trySetCount(Number.NaN)).rejects.toThrow(/count/);
    await expect(latch.await({ waitTime: -3 })).rejects.toThrow(/waitTime/);
    await expect(latch.await({ signal: 'x' } as never)).rejects.toThrow(/signal/);
  });

  test('keyPrefix: the count lives under the prefix and the zero message still wakes', async () => {
    const prefixed = redis.client({}, redis.connect({ keyPrefix: 'svc:' }));
    const latch = prefixed.getCountDownLatch('latch:prefix');
    await latch.trySetCount(1);
    expect(await redis.admin().get('svc:latch:prefix')).toBe('1');
    const waiting = timed(latch.await({ waitTime: 10_000 }));
    await sleep(300);
    await latch.countDown();
    const result = await waiting;
    expect(result.value).toBe(true);
    expect(result.ms).toBeLessThan(3_000);
    expect(countDownLatchKeys('latch:prefix').channel).toBe(
      'redisson_countdownlatch__channel__{latch:prefix}',
    );
  });
});
