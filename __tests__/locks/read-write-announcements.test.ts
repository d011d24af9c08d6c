/**
 * How rlock's read-write lock announces its releases to a Redisson client listening on one
 * server's classic channel (a cluster announces on shard channels, see docs/deployments.md).
 */
import { JavaReadWriteLock } from '../helpers/redisson-rwlock';
import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

describe('read-write lock: announcements a Redisson client hears', () => {
  const redis = useRedis();

  test('rlock holders exclude Redisson, and rlock announces releases the Redisson way', async () => {
    const listener = redis.server().connect();
    const messages: string[] = [];
    listener.on('message', (channel: string, message: string) => messages.push(`${channel} ${message}`));
    await listener.subscribe('redisson_rwlock:{interop-x}');
    const java = new JavaReadWriteLock(redis.admin(), 'interop-x');
    const rw = redis.client().getReadWriteLock('interop-x');
    await rw.writeLock().lock();
    expect(await java.readLock()).toBe(false);
    expect(await java.writeLock()).toBe(false);
    await rw.writeLock().unlock();
    await rw.readLock().lock();
    expect(await java.writeLock()).toBe(false);
    expect(await java.readLock()).toBe(true);
    await java.readUnlock();
    // rlock's reader is still in: the lock lives for its read hold.
    expect(await redis.admin().pttl('interop-x')).toBeGreaterThan(20_000);
    await rw.readLock().unlock();
    await sleep(100);
    expect(messages).toEqual(['redisson_rwlock:{interop-x} 1', 'redisson_rwlock:{interop-x} 0']);
    expect(await java.writeLock()).toBe(true);
  });
});
