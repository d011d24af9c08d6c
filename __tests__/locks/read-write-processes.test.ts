import { useRedis } from '../helpers/setup';
import { startWorker } from '../helpers/workers';

describe('read-write lock across processes', () => {
  const redis = useRedis();

  test('4 worker processes: readers share, writers exclude everyone, the counter stays exact', async () => {
    const port = String(redis.port());
    const workers = Array.from({ length: 4 }, () => startWorker([port, 'rw', 'rw-shared', '40']));
    const reports = await Promise.all(workers.map((worker) => worker.firstMessage));
    expect(reports).toEqual(['done', 'done', 'done', 'done']);
    expect(await redis.admin().get('rw-shared:counter')).toBe('40');
    expect(await redis.admin().get('rw-shared:overlaps')).toBeNull();
    // Readers of different processes were inside at once.
    expect(Number(await redis.admin().get('rw-shared:readers-max'))).toBeGreaterThan(1);
  }, 90_000);

  test('a reader killed with SIGKILL frees the lock for a writer within watchdogTimeout', async () => {
    const { child, firstMessage } = startWorker([String(redis.port()), 'hold', 'rw-crash'], {
      WATCHDOG_TIMEOUT: '1500',
      LOCK_KIND: 'read',
    });
    expect(await firstMessage).toBe('locked');
    const writer = redis.client().getReadWriteLock('rw-crash').writeLock();
    expect(await writer.tryLock()).toBe(false);
    const killedAt = performance.now();
    child.kill('SIGKILL');
    expect(await writer.tryLock(5_000)).toBe(true);
    expect(performance.now() - killedAt).toBeLessThan(1_500 + 1_000);
  }, 30_000);

  test('a writer in another process excludes readers here until it is gone', async () => {
    const { child, firstMessage } = startWorker([String(redis.port()), 'hold', 'rw-remote'], {
      LOCK_KIND: 'write',
    });
    expect(await firstMessage).toBe('locked');
    const reader = redis.client().getReadWriteLock('rw-remote').readLock();
    expect(await reader.tryLock(300)).toBe(false);
    child.kill('SIGKILL');
    expect(await redis.client().getReadWriteLock('rw-remote').writeLock().forceUnlock()).toBe(true);
    expect(await reader.tryLock()).toBe(true);
  }, 30_000);

  test('a spin lock in another process excludes getLock here', async () => {
    const { child, firstMessage } = startWorker([String(redis.port()), 'hold', 'spin-remote'], {
      LOCK_KIND: 'spin',
    });
    expect(await firstMessage).toBe('locked');
    expect(await redis.client().getLock('spin-remote').tryLock(300)).toBe(false);
    child.kill('SIGKILL');
  }, 30_000);
});
