import { JavaFairLock } from '../helpers/redisson-fair';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';
import { startWorker, type Worker } from '../helpers/workers';

/**
 * A Java service on Redisson's RFairLock and a Node service on rlock's getFairLock share one name:
 * the lock goes from one to the other at once, both ways (rlock in a process of its own, Redisson
 * played by its own commands; see helpers/redisson-fair.ts).
 */
describe("sharing a fair lock with Redisson's RFairLock", () => {
  const redis = useRedis();

  /** An rlock process that takes the fair lock `name` when told, holds it `holdMs`, releases it. */
  async function rlockTurn(name: string, holdMs: number): Promise<Worker> {
    const worker = startWorker([String(redis.port()), 'turn', name, '1'], {
      LOCK_KIND: 'fair',
      HOLD_MS: String(holdMs),
    });
    expect(await worker.firstMessage).toBe('started');
    return worker;
  }

  const java = (name: string): JavaFairLock => new JavaFairLock(redis.admin(), redis.connect(), name);
  const redissonQueue = (name: string): Promise<string[]> =>
    redis.admin().lrange(`redisson_lock_queue:{${name}}`, 0, -1);

  test('an rlock release wakes the Redisson waiter at the head at once', async () => {
    const name = 'shared-to-redisson';
    const rlock = await rlockTurn(name, 400);
    rlock.child.send('go');
    expect(await rlock.nextMessage()).toBe('locked');
    const redisson = java(name);
    // The rlock holder's lease is the watchdog's, 30 s: only a wake-up makes Redisson's wait short.
    const taking = redisson.tryLock(5_000);
    expect(await rlock.nextMessage()).toBe('done');
    const releasedAt = performance.now();
    const { taken, at } = await taking;
    expect(taken).toBe(true);
    expect(at - releasedAt).toBeLessThan(150);
    await redisson.unlock();
  });

  test('a Redisson release wakes the rlock waiter at once', async () => {
    const name = 'shared-to-rlock';
    const redisson = java(name);
    expect(await redisson.tryAcquire()).toBeNull();
    const rlock = await rlockTurn(name, 50);
    rlock.child.send('go');
    // rlock's waiter queues in its own queue, and keeps a place in Redisson's, where it listens.
    await eventually(
      'rlock waits',
      async () => (await redis.admin().llen(`rlock_fair_queue:{${name}}`)) === 1,
    );
    expect(await redissonQueue(name)).toEqual(['rlock_fair']);
    await sleep(200);
    const releasedAt = performance.now();
    await redisson.unlock();
    expect(await rlock.nextMessage()).toBe('locked');
    expect(performance.now() - releasedAt).toBeLessThan(150);
    expect(await rlock.nextMessage()).toBe('done');
    // Its turn used its place: nothing of rlock's is left in Redisson's keys.
    expect(await redissonQueue(name)).toEqual([]);
  });

  test('waiters of both take turns in the order of Redisson’s queue, each hand-over at once', async () => {
    const name = 'shared-turns';
    const first = java(name);
    expect(await first.tryAcquire()).toBeNull();
    const rlock = await rlockTurn(name, 200);
    rlock.child.send('go');
    await eventually('rlock waits', async () => (await redissonQueue(name)).length === 1);
    const second = java(name);
    const secondTaking = second.tryLock(10_000);
    await eventually(
      'the second Redisson thread waits',
      async () => (await redissonQueue(name)).length === 2,
    );
    expect(await redissonQueue(name)).toEqual(['rlock_fair', second.thread]);
    await sleep(200);
    const firstReleasedAt = performance.now();
    await first.unlock();
    expect(await rlock.nextMessage()).toBe('locked');
    expect(performance.now() - firstReleasedAt).toBeLessThan(150);
    expect(await rlock.nextMessage()).toBe('done');
    const rlockReleasedAt = performance.now();
    const { taken, at } = await secondTaking;
    expect(taken).toBe(true);
    expect(at - rlockReleasedAt).toBeLessThan(150);
    await second.unlock();
    expect(await redissonQueue(name)).toEqual([]);
  });
});
