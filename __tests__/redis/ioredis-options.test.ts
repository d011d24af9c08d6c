import type Redis from 'ioredis';
import type { LockClient } from '../../src';
import { useRedis } from '../helpers/setup';

/**
 * ioredis options that change how commands are queued and sent, as services set them. Each test
 * runs the app's own commands in the same tick as rlock's, on the one connection they share: that
 * is where a queueing option shows.
 */
describe('ioredis options', () => {
  const redis = useRedis();

  describe('enableAutoPipelining: true', () => {
    let connection: Redis;
    let client: LockClient;
    beforeEach(() => {
      connection = redis.connect({ enableAutoPipelining: true });
      client = redis.client({}, connection);
    });
    afterEach(async () => {
      await client.close();
    });

    /** Runs `work` beside a command of the app's, both sent in the same tick; returns work's answer. */
    const besideApp = async <T>(work: () => Promise<T>): Promise<T> => {
      const [answer] = await Promise.all([work(), connection.get('app-key'), connection.exists('app-key')]);
      return answer;
    };

    test('every lock kind takes and gives back, its first script defined while an auto-pipeline is open', async () => {
      const fenced = client.getFencedLock('ap-fenced');
      const rw = client.getReadWriteLock('ap-rw');
      const spin = client.getSpinLock('ap-spin');
      for (const lock of [client.getLock('ap-lock'), client.getFairLock('ap-fair'), spin, fenced]) {
        await besideApp(() => lock.lock());
        expect(await besideApp(() => lock.isHeldByCurrentTask())).toBe(true);
        await besideApp(() => lock.unlock());
        expect(await lock.isLocked()).toBe(false);
      }
      expect(await besideApp(() => fenced.tryLockAndGetToken(0))).toBeGreaterThan(0);
      await fenced.unlock();
      await besideApp(() => rw.readLock().lock());
      await besideApp(() => rw.readLock().unlock());
      await besideApp(() => rw.writeLock().lock());
      await besideApp(() => rw.writeLock().unlock());
      expect(await rw.readLock().isLocked()).toBe(false);
    });

    test('semaphores and the latch work beside the app', async () => {
      const semaphore = client.getSemaphore('ap-sem');
      expect(await besideApp(() => semaphore.trySetPermits(2))).toBe(true);
      await besideApp(() => semaphore.acquire(2));
      expect(await besideApp(() => semaphore.tryAcquire())).toBe(false);
      await besideApp(() => semaphore.release(2));
      expect(await semaphore.availablePermits()).toBe(2);

      const expirable = client.getPermitExpirableSemaphore('ap-exp');
      await besideApp(() => expirable.trySetPermits(1));
      const permit = await besideApp(() => expirable.acquire({ leaseTime: 10_000 }));
      expect(await besideApp(() => expirable.tryRelease(permit))).toBe(true);

      const latch = client.getCountDownLatch('ap-latch');
      expect(await besideApp(() => latch.trySetCount(1))).toBe(true);
      const opened = latch.await({ waitTime: 5_000 });
      await besideApp(() => latch.countDown());
      expect(await opened).toBe(true);
    });

    test('many locks at once and a contended lock handed on: each held by one task at a time', async () => {
      const inside = new Map<string, number>();
      let overlaps = 0;
      const work = async (name: string): Promise<void> => {
        await client.getLock(name).withLock(async () => {
          inside.set(name, (inside.get(name) ?? 0) + 1);
          if ((inside.get(name) as number) > 1) overlaps += 1;
          await connection.incr(`count:${name}`);
          inside.set(name, (inside.get(name) as number) - 1);
        });
      };
      await Promise.all([
        ...Array.from({ length: 300 }, (_, i) => work(`ap-many-${i}`)),
        ...Array.from({ length: 30 }, () => work('ap-contended')),
        ...Array.from({ length: 30 }, () =>
          client.getFairLock('ap-fair-contended').withLock(() => undefined),
        ),
      ]);
      expect(overlaps).toBe(0);
      expect(Number(await connection.get('count:ap-contended'))).toBe(30);
      expect(Number(await connection.get('count:ap-many-299'))).toBe(1);
    });
  });
});
