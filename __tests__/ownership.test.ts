import { useRedis } from './helpers/setup';
import { sleep } from './helpers/wait';

describe('ownership through async call chains', () => {
  const redis = useRedis();

  test('nested withLock on one name re-enters instead of deadlocking', async () => {
    const client = redis.client();
    const counts: number[] = [];
    const inner = async (): Promise<void> => {
      await client.getLock('nested').withLock(async () => {
        counts.push(await client.getLock('nested').getHoldCount());
      });
    };
    await client.getLock('nested').withLock(async () => {
      counts.push(await client.getLock('nested').getHoldCount());
      await inner();
      counts.push(await client.getLock('nested').getHoldCount());
    });
    expect(counts).toEqual([1, 2, 1]);
    expect(await client.getLock('nested').isLocked()).toBe(false);
  });

  test('every handle in a task acts for the task, across awaits and timers', async () => {
    const client = redis.client();
    await client.runInTask(async () => {
      await client.getLock('task').lock();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await client.getLock('task').tryLock()).toBe(true);
      expect(await client.getLock('task').getHoldCount()).toBe(2);
      await client.getLock('task').unlock();
      await client.getLock('task').unlock();
    });
    expect(await client.getLock('task').isLocked()).toBe(false);
  });

  test('concurrent tasks are different owners and exclude each other', async () => {
    const client = redis.client();
    const events: string[] = [];
    const task = (id: string) =>
      client.runInTask(async () => {
        const lock = client.getLock('tasks');
        await lock.lock();
        events.push(`${id} in`);
        await sleep(50);
        events.push(`${id} out`);
        await lock.unlock();
      });
    await Promise.all([task('a'), task('b'), task('c')]);
    for (let i = 0; i < events.length; i += 2) {
      expect(events[i]?.split(' ')[0]).toBe(events[i + 1]?.split(' ')[0]);
    }
  });

  test('runInTask inside a task starts a new owner', async () => {
    const client = redis.client();
    await client.runInTask(async () => {
      await client.getLock('fork').lock();
      const inChild = await client.runInTask(() => client.getLock('fork').tryLock());
      expect(inChild).toBe(false);
      await client.getLock('fork').unlock();
    });
  });

  test('two clients never share an owner even with the same task', async () => {
    const a = redis.client();
    const b = redis.client();
    await a.runInTask(async () => {
      await a.getLock('clients').lock();
      expect(await b.getLock('clients').tryLock()).toBe(false);
      await a.getLock('clients').unlock();
    });
  });

  test('withLock outside a task runs as its own owner, not the handle', async () => {
    const client = redis.client();
    const lock = client.getLock('own');
    await lock.withLock(async () => {
      expect(await lock.getHoldCount()).toBe(1);
      expect(await client.getLock('own').isHeldByCurrentTask()).toBe(true);
    });
    expect(await lock.getHoldCount()).toBe(0);
  });

  test('withLock returns the callback value and releases when it throws', async () => {
    const client = redis.client();
    const lock = client.getLock('result');
    expect(await lock.withLock(() => 42)).toBe(42);
    await expect(
      lock.withLock(() => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await lock.isLocked()).toBe(false);
  });
});
