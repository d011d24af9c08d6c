import { useRedis } from '../helpers/setup';
import { startWorker } from '../helpers/workers';

describe('across processes', () => {
  const redis = useRedis();

  test('4 worker processes keep a non-atomic counter exact, with no overlapping holds', async () => {
    const port = String(redis.port());
    const workers = Array.from({ length: 4 }, () => startWorker([port, 'counter', 'shared', '40']));
    const reports = await Promise.all(workers.map((worker) => worker.firstMessage));
    expect(reports).toEqual(['done', 'done', 'done', 'done']);
    expect(await redis.admin().get('shared:counter')).toBe('160');
    expect(await redis.admin().get('shared:overlaps')).toBeNull();
  }, 60_000);

  test('a holder killed with SIGKILL frees the lock within watchdogTimeout', async () => {
    const { child, firstMessage } = startWorker([String(redis.port()), 'hold', 'crash'], {
      WATCHDOG_TIMEOUT: '1500',
    });
    expect(await firstMessage).toBe('locked');
    const lock = redis.client().getLock('crash');
    expect(await lock.tryLock()).toBe(false);
    const killedAt = performance.now();
    child.kill('SIGKILL');
    expect(await lock.tryLock(5_000)).toBe(true);
    expect(performance.now() - killedAt).toBeLessThan(1_500 + 500);
  }, 30_000);

  test('a holder in another process excludes this one until it is gone', async () => {
    const { child, firstMessage } = startWorker([String(redis.port()), 'hold', 'remote']);
    expect(await firstMessage).toBe('locked');
    const lock = redis.client().getLock('remote');
    expect(await lock.tryLock(300)).toBe(false);
    child.kill('SIGKILL');
    await lock.forceUnlock();
    expect(await lock.tryLock()).toBe(true);
  }, 30_000);
});
