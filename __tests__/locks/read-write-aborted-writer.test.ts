import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

/**
 * A writer of a writer-preferring read-write lock whose wait is aborted while its first attempt is
 * still on its way (the attempt runs after the abort) leaves no place behind: readers are not held
 * off by a writer that no longer waits. Found by the simulation (seed 1600; see
 * __tests__/simulation-regressions.test.ts): the place stayed until it expired, a lease later.
 */
describe('an aborted writer of a writer-preferring lock', () => {
  const redis = useRedis();

  test('leaves no place behind when its first attempt lands after the abort', async () => {
    const holder = redis.client().getReadWriteLock('aborted-writer', { writerPreference: true });
    await holder.writeLock().lock();
    const writer = redis.client().getReadWriteLock('aborted-writer', { writerPreference: true }).writeLock();
    // Every EVAL waits while writes are paused: the writer's first attempt runs after its abort.
    await redis.pauseWrites(300);
    const controller = new AbortController();
    const waiting = writer.tryLock({ waitTime: 5_000, signal: controller.signal });
    await sleep(50);
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    await sleep(400);
    await holder.writeLock().unlock();
    const reader = redis.client().getReadWriteLock('aborted-writer', { writerPreference: true }).readLock();
    // A place left behind would make readers queue behind it until it expires.
    expect(await reader.tryLock()).toBe(true);
    await reader.unlock();
  });
});
