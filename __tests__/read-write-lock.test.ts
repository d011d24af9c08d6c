import { LockNotHeldError, LockTimeoutError } from '../src';
import { isHoldMark } from '../src/keys';
import { useRedis } from './helpers/setup';
import { eventually, sleep, timed } from './helpers/wait';

/** The hash's mode and owner fields with their counts, without the marks of rlock's holds. */
async function rwState(redis: { hgetall(key: string): Promise<Record<string, string>> }, name: string) {
  const hash = await redis.hgetall(name);
  return Object.fromEntries(Object.entries(hash).filter(([field]) => !isHoldMark(field)));
}

/** Keys of locks left in Redis (not the client registry, nor the latches of released holds). */
async function lockKeysLeft(redis: { keys(pattern: string): Promise<string[]> }): Promise<string[]> {
  const keys = await redis.keys('*');
  return keys.filter((key) => !key.startsWith('rlock_client:') && !key.startsWith('rlock_hold_latch:'));
}

// The scenarios of Redisson's RedissonReadWriteLockTest, in milliseconds and Promises.
describe('read-write lock', () => {
  const redis = useRedis();

  test('many readers at once; a writer waits for all of them', async () => {
    const client = redis.client();
    const a = client.getReadWriteLock('shared');
    const b = client.getReadWriteLock('shared');
    await a.readLock().lock();
    expect(await b.readLock().tryLock()).toBe(true);
    const writer = client.getReadWriteLock('shared').writeLock();
    expect(await writer.tryLock()).toBe(false);
    const waiting = writer.tryLock(10_000);
    await sleep(100);
    await a.readLock().unlock();
    await sleep(100);
    await b.readLock().unlock();
    expect(await waiting).toBe(true);
    expect(await writer.isLocked()).toBe(true);
    await writer.unlock();
    expect(await redis.admin().exists('shared')).toBe(0);
  });

  test('a writer excludes other writers and readers; its release wakes every waiting reader (testWriteRead)', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('w-then-r');
    await rw.writeLock().lock();
    expect(await client.getReadWriteLock('w-then-r').writeLock().tryLock()).toBe(false);
    const readers = Array.from({ length: 5 }, () =>
      client.runInTask(() => client.getReadWriteLock('w-then-r').readLock().tryLock(10_000)),
    );
    await sleep(200);
    const released = performance.now();
    await rw.writeLock().unlock();
    expect(await Promise.all(readers)).toEqual([true, true, true, true, true]);
    expect(performance.now() - released).toBeLessThan(2_000);
    const state = await rwState(redis.admin(), 'w-then-r');
    expect(state.mode).toBe('read');
    expect(Object.keys(state)).toHaveLength(6);
  });

  test('keeps the Redisson layout: mode, owner fields, <owner>:write, per-hold timeout keys', async () => {
    const client = redis.client({ clientId: 'rw-layout' });
    const rw = client.getReadWriteLock('layout');
    await rw.writeLock().lock();
    await rw.readLock().lock();
    await rw.readLock().lock();
    const state = await rwState(redis.admin(), 'layout');
    const reader = Object.keys(state).find(
      (field) => field !== 'mode' && !field.endsWith(':write'),
    ) as string;
    expect(reader).toMatch(/^rw-layout\/[0-9a-f]{16}:\d+$/);
    expect(state).toEqual({ mode: 'write', [`${reader}:write`]: '1', [reader]: '2' });
    const timeouts = (await redis.admin().keys('{layout}:*')).sort();
    expect(timeouts).toEqual([`{layout}:${reader}:rwlock_timeout:1`, `{layout}:${reader}:rwlock_timeout:2`]);
    expect(await redis.admin().pttl(timeouts[0] as string)).toBeGreaterThan(25_000);
    await rw.readLock().unlock();
    expect(await redis.admin().keys('{layout}:*')).toEqual([`{layout}:${reader}:rwlock_timeout:1`]);
    await rw.readLock().unlock();
    await rw.writeLock().unlock();
    expect(await lockKeysLeft(redis.admin())).toEqual([]);
  });

  test('downgrade: a writer takes the read lock and keeps it after releasing the write lock (testWriteReadReentrancy)', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('downgrade');
    await rw.writeLock().lock();
    expect(await rw.readLock().tryLock()).toBe(true);
    const other = client.getReadWriteLock('downgrade');
    expect(await other.readLock().tryLock()).toBe(false);
    await rw.writeLock().unlock();
    expect((await rwState(redis.admin(), 'downgrade')).mode).toBe('read');
    // Still reading: no writer (not even this owner: no upgrade) gets in; other readers do.
    expect(await rw.writeLock().tryLock()).toBe(false);
    expect(await other.writeLock().tryLock()).toBe(false);
    expect(await other.readLock().tryLock()).toBe(true);
    await other.readLock().unlock();
    await rw.readLock().unlock();
    expect(await rw.writeLock().tryLock()).toBe(true);
    await rw.writeLock().unlock();
    expect(await redis.admin().exists('downgrade')).toBe(0);
  });

  test('after a downgrade, releasing the write lock wakes waiting readers at once', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('downgrade-wakes');
    await rw.writeLock().lock();
    await rw.readLock().lock();
    const reader = client.getReadWriteLock('downgrade-wakes').readLock();
    const waiting = timed(reader.tryLock(20_000));
    await sleep(200);
    await rw.writeLock().unlock();
    const { value, ms } = await waiting;
    expect(value).toBe(true);
    expect(ms).toBeLessThan(3_000);
  });

  test('upgrade is refused even for the only reader: the write wait runs out, it never deadlocks', async () => {
    const rw = redis.client().getReadWriteLock('upgrade');
    await rw.readLock().lock();
    const { value, ms } = await timed(rw.writeLock().tryLock(500));
    expect(value).toBe(false);
    expect(ms).toBeGreaterThanOrEqual(450);
    expect(ms).toBeLessThan(3_000);
    await expect(rw.writeLock().withLock(() => 1, { waitTime: 300 })).rejects.toThrow(LockTimeoutError);
    expect(await rw.readLock().getHoldCount()).toBe(1);
    expect(await rw.writeLock().getHoldCount()).toBe(0);
    await rw.readLock().unlock();
    expect(await lockKeysLeft(redis.admin())).toEqual([]);
  });

  test('reentrant: hold counts per half, unlock counts down (testHoldCount, testReentrancy)', async () => {
    const rw = redis.client().getReadWriteLock('counts');
    await rw.writeLock().lock();
    await rw.writeLock().lock();
    await rw.readLock().lock();
    expect(await rw.writeLock().getHoldCount()).toBe(2);
    expect(await rw.readLock().getHoldCount()).toBe(1);
    expect(await rw.writeLock().isHeldByCurrentTask()).toBe(true);
    expect(await rw.readLock().isHeldByCurrentTask()).toBe(true);
    await rw.writeLock().unlock();
    await rw.writeLock().unlock();
    await expect(rw.writeLock().unlock()).rejects.toThrow(LockNotHeldError);
    expect(await rw.readLock().getHoldCount()).toBe(1);
    await rw.readLock().unlock();
    await expect(rw.readLock().unlock()).rejects.toThrow(LockNotHeldError);
  });

  test('isLocked means what it means in Redisson (testReadLockIsLocked, testWR, testIsLocked)', async () => {
    const rw = redis.client().getReadWriteLock('is-locked');
    expect(await rw.readLock().isLocked()).toBe(false);
    expect(await rw.writeLock().isLocked()).toBe(false);
    await rw.writeLock().lock();
    expect(await rw.readLock().isLocked()).toBe(false);
    expect(await rw.writeLock().isLocked()).toBe(true);
    expect(await rw.readLock().tryLock(10_000)).toBe(true);
    expect(await rw.readLock().isLocked()).toBe(true);
    await rw.readLock().unlock();
    expect(await rw.writeLock().isLocked()).toBe(true);
    expect(await rw.readLock().isLocked()).toBe(false);
    await rw.writeLock().unlock();
    expect(await rw.writeLock().isLocked()).toBe(false);
  });

  test('forceUnlock of each half deletes only a lock in its own mode, and wakes waiters (testForceUnlock)', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('force');
    await rw.readLock().lock();
    expect(await rw.writeLock().forceUnlock()).toBe(false);
    expect(await rw.readLock().isLocked()).toBe(true);
    const lost: string[] = [];
    client.on('lockLost', (event) => lost.push(event.code));
    expect(await rw.readLock().forceUnlock()).toBe(true);
    expect(await rw.readLock().isLocked()).toBe(false);
    expect(lost).toEqual(['force-unlocked']);

    await rw.writeLock().lock();
    const writer = client.getReadWriteLock('force').writeLock();
    const waiting = timed(writer.tryLock(20_000));
    expect(await rw.readLock().forceUnlock()).toBe(false);
    expect(await rw.writeLock().isLocked()).toBe(true);
    await sleep(100);
    expect(await rw.writeLock().forceUnlock()).toBe(true);
    const { value, ms } = await waiting;
    expect(value).toBe(true);
    expect(ms).toBeLessThan(3_000);
  });

  test('a read lock is woken by expiry: a writer whose lease ran out (testWriteLockExpiration)', async () => {
    const client = redis.client();
    await client.getReadWriteLock('expiry').writeLock().lock(600);
    const { value, ms } = await timed(client.getReadWriteLock('expiry').readLock().tryLock(10_000));
    expect(value).toBe(true);
    expect(ms).toBeGreaterThan(400);
    expect(ms).toBeLessThan(3_000);
  });

  test('read leases: the lock lives as long as its longest read hold (testReadLockLeaseTimeout)', async () => {
    const client = redis.client();
    expect(await client.getReadWriteLock('leases').readLock().tryLock(0, 1_500)).toBe(true);
    await sleep(700);
    const second = client.getReadWriteLock('leases').readLock();
    expect(await second.tryLock(0, 1_500)).toBe(true);
    await second.unlock();
    // The first hold's 800 ms are what is left.
    const ttl = await redis.admin().pttl('leases');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(900);
    await sleep(1_000);
    expect(await client.getReadWriteLock('leases').writeLock().tryLock()).toBe(true);
  });

  test('a write re-entry never shortens the lease', async () => {
    const rw = redis.client().getReadWriteLock('no-shorten');
    await rw.writeLock().lock(20_000);
    await rw.writeLock().lock(1_000);
    expect(await rw.writeLock().remainTimeToLive()).toBeGreaterThan(18_000);
  });

  test('the watchdog keeps read holds and their timeout keys alive (testReadLockExpirationRenewal)', async () => {
    const client = redis.client({ watchdogTimeout: 1_500 });
    const rw = client.getReadWriteLock('renewed');
    await rw.readLock().lock();
    await rw.readLock().lock();
    const other = client.getReadWriteLock('renewed');
    await other.readLock().lock();
    await other.readLock().unlock();
    await sleep(3_500);
    expect(await rw.readLock().getHoldCount()).toBe(2);
    const timeouts = await redis.admin().keys('{renewed}:*');
    expect(timeouts).toHaveLength(2);
    for (const key of timeouts) expect(await redis.admin().pttl(key)).toBeGreaterThan(300);
    await rw.readLock().unlock();
    await rw.readLock().unlock();
    expect(await lockKeysLeft(redis.admin())).toEqual([]);
  });

  test('inside a task the task owns both halves; two tasks are two owners', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('tasks');
    await client.runInTask(async () => {
      await rw.writeLock().lock();
      // Another handle of the same name, used in this task, acts for it too.
      expect(await client.getReadWriteLock('tasks').readLock().tryLock()).toBe(true);
      const other = await client.runInTask(() => rw.readLock().tryLock());
      expect(other).toBe(false);
      await rw.writeLock().unlock();
      await client.getReadWriteLock('tasks').readLock().unlock();
    });
    expect(await redis.admin().exists('tasks')).toBe(0);
  });

  test('withLock: a read body may nest a read; sibling branches of one task take turns on the write lock', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('bodies');
    const inside: number[] = [];
    let concurrent = 0;
    await client.runInTask(() =>
      Promise.all(
        [1, 2, 3].map((i) =>
          rw.writeLock().withLock(async () => {
            concurrent += 1;
            inside.push(concurrent);
            await rw.readLock().withLock(() => sleep(20));
            concurrent -= 1;
            return i;
          }),
        ),
      ),
    );
    expect(inside).toEqual([1, 1, 1]);
    expect(await lockKeysLeft(redis.admin())).toEqual([]);
  });

  test('an aborted wait rejects with the reason and leaves nothing behind', async () => {
    const client = redis.client();
    await client.getReadWriteLock('abort').writeLock().lock();
    const controller = new AbortController();
    const reader = client.getReadWriteLock('abort').readLock();
    const waiting = reader.lock({ signal: controller.signal });
    await sleep(100);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    expect(await reader.getHoldCount()).toBe(0);
    expect(Object.keys(await rwState(redis.admin(), 'abort'))).toHaveLength(2);
  });

  test('bad input is refused with errors naming the argument', () => {
    const client = redis.client();
    expect(() => client.getReadWriteLock('')).toThrow(/^name must be a non-empty string/);
    expect(() => client.getReadWriteLock('x', { writerPreference: 'yes' as unknown as boolean })).toThrow(
      /writerPreference must be a boolean/,
    );
    expect(() => client.getReadWriteLock('x', { fair: true } as never)).toThrow(/fair/);
  });

  test('a value of another kind at the name counts as held, never as free', async () => {
    await redis.admin().set('not-a-lock', 'x');
    const rw = redis.client().getReadWriteLock('not-a-lock');
    await expect(rw.readLock().tryLock()).rejects.toThrow(/WRONGTYPE/);
    await redis.admin().del('not-a-lock');
    await redis.admin().hset('plain', 'someone:1', '1');
    expect(await redis.client().getReadWriteLock('plain').readLock().tryLock()).toBe(false);
    expect(await redis.client().getReadWriteLock('plain').writeLock().tryLock()).toBe(false);
  });

  test('a crashed holder ends with its lease: readers and writers of other clients take over', async () => {
    const gone = redis.client({ watchdogTimeout: 1_000 });
    await gone.getReadWriteLock('crash').readLock().lock();
    // The client stops renewing without releasing (as a killed process would).
    (gone as unknown as { watchdog: { stop(): void } }).watchdog.stop();
    const { value, ms } = await timed(redis.client().getReadWriteLock('crash').writeLock().tryLock(10_000));
    expect(value).toBe(true);
    expect(ms).toBeLessThan(4_000);
    await eventually(
      'the timeout keys expire',
      async () => (await redis.admin().keys('{crash}:*')).length === 0,
    );
  });
});
