import { LockTimeoutError } from '../../src';
import { useRedis } from '../helpers/setup';

// Jest runs tests in a sandbox whose Symbol lacks Node's Symbol.asyncDispose: install it the way a
// polyfill would, as an application on an older runtime does.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for('Symbol.asyncDispose');

describe('hold(): a hold for `await using`', () => {
  const redis = useRedis();

  test('held inside the block, released when the block is left', async () => {
    const client = redis.client();
    const lock = client.getLock('held-block');
    {
      await using held = await lock.hold();
      expect(held.signal.aborted).toBe(false);
      expect(await lock.isHeldByCurrentTask()).toBe(true);
      expect(await redis.client().getLock('held-block').tryLock()).toBe(false);
    }
    expect(await lock.isLocked()).toBe(false);
  });

  test('released when the block is left by an exception too', async () => {
    const lock = redis.client().getLock('held-throw');
    const work = async (): Promise<void> => {
      await using held = await lock.hold({ leaseTime: 30_000 });
      expect(held.signal.aborted).toBe(false);
      throw new Error('the body failed');
    };
    await expect(work()).rejects.toThrow('the body failed');
    expect(await lock.isLocked()).toBe(false);
  });

  test('release() gives back this hold once; code after hold() re-enters', async () => {
    const lock = redis.client().getLock('held-reentry');
    const held = await lock.hold();
    await lock.lock();
    expect(await lock.getHoldCount()).toBe(2);
    await held.release();
    await held.release();
    expect(await lock.getHoldCount()).toBe(1);
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
  });

  test('a wait that runs out throws LockTimeoutError', async () => {
    await redis.client().getLock('held-busy').lock();
    const started = performance.now();
    await expect(redis.client().getLock('held-busy').hold({ waitTime: 200 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
  });

  test('a fenced hold carries its token; a fair lock and a read lock hold too', async () => {
    const client = redis.client();
    const fenced = client.getFencedLock('held-fenced');
    {
      await using first = await fenced.hold();
      expect(typeof first.token).toBe('number');
    }
    {
      await using second = await fenced.hold();
      expect(second.token).toBeGreaterThan(0);
      expect(await fenced.getToken()).toBe(second.token);
    }
    {
      await using fair = await client.getFairLock('held-fair').hold();
      await using read = await client.getReadWriteLock('held-rw').readLock().hold();
      expect(fair.signal.aborted || read.signal.aborted).toBe(false);
      expect(await client.getReadWriteLock('held-rw').writeLock().tryLock()).toBe(false);
    }
    expect(await client.getFairLock('held-fair').isLocked()).toBe(false);
    expect(await client.getReadWriteLock('held-rw').readLock().isLocked()).toBe(false);
  });

  test('a MultiLock holds every member until the block is left', async () => {
    const client = redis.client();
    const multi = client.getMultiLock(client.getLock('held-m1'), client.getLock('held-m2'));
    {
      await using held = await multi.hold({ waitTime: 1_000 });
      expect(held.signal.aborted).toBe(false);
      expect(await client.getLock('held-m1').isLocked()).toBe(true);
      expect(await client.getLock('held-m2').isLocked()).toBe(true);
    }
    expect(await client.getLock('held-m1').isLocked()).toBe(false);
    expect(await client.getLock('held-m2').isLocked()).toBe(false);
  });

  test('after close(), leaving the block is quiet: close() gave the hold back', async () => {
    const client = redis.client();
    const lock = client.getLock('held-close');
    const held = await lock.hold();
    await client.close();
    expect(held.signal.aborted).toBe(true);
    await expect(held.release()).resolves.toBeUndefined();
    expect(await redis.admin().exists('held-close')).toBe(0);
  });
});
