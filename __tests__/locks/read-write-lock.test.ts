import { LockNotHeldError, LockTimeoutError } from '../../src';
import { isHoldMark } from '../../src/protocol/keys';
import { deployment } from '../helpers/deployment';
import { JavaReadWriteLock } from '../helpers/redisson-rwlock';
import { useRedis } from '../helpers/setup';
import { eventually, sleep, timed } from '../helpers/wait';
import { startWorker } from '../helpers/workers';

/** The hash's mode and owner fields with their counts, without the marks of rlock's holds. */
async function rwState(redis: { hgetall(key: string): Promise<Record<string, string>> }, name: string) {
  const hash = await redis.hgetall(name);
  return Object.fromEntries(Object.entries(hash).filter(([field]) => !isHoldMark(field)));
}

/** Keys of locks left in Redis, on every master (not the client registry, nor released holds' latches). */
async function lockKeysLeft(redis: ReturnType<typeof useRedis>): Promise<string[]> {
  const keys = (await redis.everyMaster((node) => node.keys('*'))).flat();
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
    const timeout = (n: number): string => `{layout}:${reader}:rwlock_timeout:${n}`;
    expect(await redis.admin().pttl(timeout(1))).toBeGreaterThan(25_000);
    expect(await redis.admin().pttl(timeout(2))).toBeGreaterThan(25_000);
    await rw.readLock().unlock();
    expect(await redis.admin().exists(timeout(1), timeout(2))).toBe(1);
    expect(await redis.admin().exists(timeout(2))).toBe(0);
    await rw.readLock().unlock();
    await rw.writeLock().unlock();
    expect(await lockKeysLeft(redis)).toEqual([]);
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
    expect(await lockKeysLeft(redis)).toEqual([]);
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

  test('testWriteLock: a writer re-enters; another owner sees it locked, not its own, and reads after it', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('test-write-lock');
    await rw.writeLock().lock();
    expect(await rw.writeLock().tryLock()).toBe(true);
    await client.runInTask(async () => {
      expect(await rw.writeLock().isHeldByCurrentTask()).toBe(false);
      expect(await rw.writeLock().isLocked()).toBe(true);
      expect(await rw.readLock().tryLock()).toBe(false);
      expect(await client.getReadWriteLock('test-write-lock').readLock().tryLock()).toBe(false);
    });
    await rw.writeLock().unlock();
    expect(await rw.readLock().tryLock()).toBe(true);
    expect(await rw.writeLock().isHeldByCurrentTask()).toBe(true);
    await rw.writeLock().unlock();
    // Still reading: the write lock is free, yet nobody (this owner neither) may write.
    expect(await rw.writeLock().tryLock()).toBe(false);
    expect(await rw.writeLock().isLocked()).toBe(false);
    expect(await rw.writeLock().isHeldByCurrentTask()).toBe(false);
    expect(await client.runInTask(() => rw.readLock().tryLock())).toBe(true);
  });

  test('testMultiRead: readers of two owners; the lock is free for a writer only when both are gone', async () => {
    const client = redis.client();
    const rw = client.getReadWriteLock('test-multi-read');
    expect(await rw.readLock().forceUnlock()).toBe(false);
    await rw.readLock().lock();
    expect(await rw.writeLock().tryLock()).toBe(false);
    const other = client.getReadWriteLock('test-multi-read').readLock();
    expect(await other.isHeldByCurrentTask()).toBe(false);
    expect(await other.isLocked()).toBe(true);
    await other.lock(800);
    await rw.readLock().unlock();
    expect(await rw.writeLock().tryLock()).toBe(false);
    expect(await rw.readLock().isHeldByCurrentTask()).toBe(false);
    await sleep(1_000);
    expect(await other.isLocked()).toBe(false);
    expect(await rw.writeLock().tryLock()).toBe(true);
    expect(await rw.writeLock().isHeldByCurrentTask()).toBe(true);
    await rw.writeLock().unlock();
    expect(await rw.writeLock().isLocked()).toBe(false);
  });

  test('testReadLockLeaseTimeoutDiffThreadsWRR: readers waiting behind a writer with a lease get in when it expires', async () => {
    const client = redis.client();
    expect(await client.getReadWriteLock('wrr').writeLock().tryLock(100, 1_000)).toBe(true);
    const started = performance.now();
    const readers = [1, 2].map(() => client.getReadWriteLock('wrr').readLock().tryLock(5_000));
    expect(await Promise.all(readers)).toEqual([true, true]);
    expect(performance.now() - started).toBeGreaterThan(700);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  /** 10 owners x 10 rounds of reads and writes on one name; counts a writer beside anyone. */
  async function overlapsOf(broken: boolean): Promise<number> {
    const client = redis.client();
    let writers = 0;
    let readers = 0;
    let overlaps = 0;
    await Promise.all(
      Array.from({ length: 10 }, (_, owner) =>
        client.runInTask(async () => {
          for (let round = 0; round < 10; round += 1) {
            const rw = client.getReadWriteLock('concurrency');
            if ((owner + round) % 3 === 0) {
              // The negative control writes under the read lock: writers then meet readers.
              await (broken ? rw.readLock() : rw.writeLock()).withLock(async () => {
                writers += 1;
                if (writers > 1 || readers > 0) overlaps += 1;
                await sleep(1);
                writers -= 1;
              });
            } else {
              await rw.readLock().withLock(async () => {
                readers += 1;
                if (writers > 0) overlaps += 1;
                await sleep(1);
                readers -= 1;
              });
            }
          }
        }),
      ),
    );
    return overlaps;
  }

  test('testConcurrency: 10 owners x 10 rounds of reads and writes, never a writer beside anyone', async () => {
    expect(await overlapsOf(true)).toBeGreaterThan(0);
    expect(await overlapsOf(false)).toBe(0);
    expect(await lockKeysLeft(redis)).toEqual([]);
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
    const reader = Object.keys(await rwState(redis.admin(), 'renewed')).find((field) => field !== 'mode');
    for (const n of [1, 2]) {
      expect(await redis.admin().pttl(`{renewed}:${reader}:rwlock_timeout:${n}`)).toBeGreaterThan(300);
    }
    await rw.readLock().unlock();
    await rw.readLock().unlock();
    expect(await lockKeysLeft(redis)).toEqual([]);
  });

  test("a MultiLock of read locks with a lease shortens only its own read holds, never another reader's", async () => {
    const client = redis.client();
    const other = client.getReadWriteLock('multi-a');
    await other.readLock().lock();
    const group = client.getMultiLock(
      client.getReadWriteLock('multi-a').readLock(),
      client.getReadWriteLock('multi-b').readLock(),
    );
    expect(await group.tryLock(1_000, 800)).toBe(true);
    expect(await redis.admin().pttl('multi-b')).toBeLessThanOrEqual(800);
    expect(await redis.admin().pttl('multi-a')).toBeGreaterThan(20_000);
    await sleep(1_000);
    expect(await redis.admin().exists('multi-b')).toBe(0);
    expect(await other.readLock().getHoldCount()).toBe(1);
    await other.readLock().unlock();
    expect(await redis.admin().exists('multi-a')).toBe(0);
  });

  test('an ioredis keyPrefix applies to the hash, the timeout keys and the channel, waking included', async () => {
    const client = redis.client({}, redis.connect({ keyPrefix: 'app:' }));
    const rw = client.getReadWriteLock('prefixed');
    await rw.writeLock().lock();
    await rw.readLock().lock();
    const reader = Object.keys(await rwState(redis.admin(), 'app:prefixed')).find(
      (field) => field !== 'mode' && !field.endsWith(':write'),
    );
    // On a cluster the prefix moves the hash to another slot, and the other keys follow it there.
    if (deployment === 'standalone') {
      expect(await redis.admin().exists(`app:{prefixed}:${reader}:rwlock_timeout:1`)).toBe(1);
    }
    const waiting = timed(
      redis
        .client({}, redis.connect({ keyPrefix: 'app:' }))
        .getReadWriteLock('prefixed')
        .writeLock()
        .tryLock(20_000),
    );
    await sleep(200);
    await rw.writeLock().unlock();
    await rw.readLock().unlock();
    const { value, ms } = await waiting;
    expect(value).toBe(true);
    expect(ms).toBeLessThan(3_000);
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
    expect(await lockKeysLeft(redis)).toEqual([]);
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

describe('read-write lock: Redisson interop', () => {
  const redis = useRedis();

  test('a Redisson writer excludes rlock readers and writers, and its release wakes them', async () => {
    const java = new JavaReadWriteLock(redis.admin(), 'interop-w');
    expect(await java.writeLock()).toBe(true);
    const client = redis.client();
    expect(await client.getReadWriteLock('interop-w').readLock().tryLock()).toBe(false);
    expect(await client.getReadWriteLock('interop-w').writeLock().tryLock()).toBe(false);
    const readers = [1, 2].map(() => timed(client.getReadWriteLock('interop-w').readLock().tryLock(20_000)));
    await sleep(200);
    await java.writeUnlock();
    for (const { value, ms } of await Promise.all(readers)) {
      expect(value).toBe(true);
      expect(ms).toBeLessThan(3_000);
    }
  });

  test('Redisson readers and rlock readers share the lock; the last release wakes an rlock writer', async () => {
    const java = new JavaReadWriteLock(redis.admin(), 'interop-r');
    expect(await java.readLock()).toBe(true);
    const client = redis.client();
    const reader = client.getReadWriteLock('interop-r').readLock();
    expect(await reader.tryLock()).toBe(true);
    const writer = client.getReadWriteLock('interop-r').writeLock();
    const waiting = timed(writer.tryLock(20_000));
    await sleep(100);
    await reader.unlock();
    await sleep(100);
    await java.readUnlock();
    const { value, ms } = await waiting;
    expect(value).toBe(true);
    expect(ms).toBeLessThan(3_000);
  });

  test("rlock releasing after a Redisson reader's lease ran out deletes the lock (zombie cleanup)", async () => {
    const java = new JavaReadWriteLock(redis.admin(), 'zombie');
    expect(await java.readLock(300)).toBe(true);
    const rw = redis.client().getReadWriteLock('zombie');
    await rw.readLock().lock(60_000);
    await sleep(400);
    await rw.readLock().unlock();
    expect(await redis.admin().exists('zombie')).toBe(0);
  });
});

describe('read-write lock: writerPreference', () => {
  const redis = useRedis();

  test('without it (Redisson): new readers join readers even while a writer waits', async () => {
    const client = redis.client();
    await client.getReadWriteLock('readers-first').readLock().lock();
    const writer = client.getReadWriteLock('readers-first').writeLock().tryLock(1_000);
    await sleep(100);
    expect(await client.getReadWriteLock('readers-first').readLock().tryLock()).toBe(true);
    expect(await writer).toBe(false);
  });

  test('with it: new readers queue behind a waiting writer, which gets the lock when the readers in go', async () => {
    const client = redis.client();
    const first = client.getReadWriteLock('writers-first');
    await first.readLock().lock();
    const order: string[] = [];
    const writer = client.getReadWriteLock('writers-first', { writerPreference: true }).writeLock();
    const writing = writer.tryLock(10_000).then(async (taken) => {
      order.push('writer');
      await sleep(100);
      await writer.unlock();
      return taken;
    });
    await sleep(150);
    // A plain handle agrees: the preference is the name's, kept in Redis.
    const late = client.getReadWriteLock('writers-first').readLock();
    expect(await late.tryLock()).toBe(false);
    const reading = late.tryLock(10_000).then((taken) => {
      order.push('reader');
      return taken;
    });
    // A reader already in re-enters (else it would wait for a writer that waits for it).
    expect(await first.readLock().tryLock()).toBe(true);
    await first.readLock().unlock();
    await sleep(150);
    await first.readLock().unlock();
    expect(await writing).toBe(true);
    expect(await reading).toBe(true);
    expect(order).toEqual(['writer', 'reader']);
    // It lived while the name was in use: the writer's release left the name idle for a moment
    // (the reader waiting behind it held nothing yet), and the preference went with the lock.
    expect(await redis.admin().exists('rlock_rwlock_writer_preference:{writers-first}')).toBe(0);
    await late.unlock();
    expect(await withoutTtl('writers-first')).toEqual([]);
  });

  test('a writer that gives up wakes the readers queued behind it at once', async () => {
    const client = redis.client();
    await client.getReadWriteLock('gives-up').readLock().lock();
    const writer = client.getReadWriteLock('gives-up', { writerPreference: true }).writeLock();
    const writing = writer.tryLock(800);
    await sleep(100);
    const reading = timed(client.getReadWriteLock('gives-up').readLock().tryLock(20_000));
    expect(await writing).toBe(false);
    const { value, ms } = await reading;
    expect(value).toBe(true);
    expect(ms).toBeLessThan(2_500);
    expect(await redis.admin().zcard('rlock_rwlock_writers:{gives-up}')).toBe(0);
  });

  test('one of two waits of a writer that gives up leaves the writer its place', async () => {
    const client = redis.client();
    const name = 'sibling-writer-gives-up';
    const reader = client.getReadWriteLock(name).readLock();
    await reader.lock();
    const writer = client.getReadWriteLock(name, { writerPreference: true }).writeLock();
    const short = writer.tryLock(300);
    const long = writer.tryLock(10_000);
    expect(await short).toBe(false);
    // The writer still waits: new readers still queue behind it.
    expect(await redis.admin().zcard(`rlock_rwlock_writers:{${name}}`)).toBe(1);
    expect(await redis.client().getReadWriteLock(name).readLock().tryLock()).toBe(false);
    await reader.unlock();
    expect(await long).toBe(true);
    await writer.unlock();
  });

  test('a crashed waiting writer stops blocking readers within one lease', async () => {
    const client = redis.client({ watchdogTimeout: 1_500 });
    await redis.admin().set('rlock_rwlock_writer_preference:{crashed-writer}', '1');
    await client.getReadWriteLock('crashed-writer').readLock().lock();
    // What a writer process killed while waiting leaves: its place, until it lapses.
    const [seconds, micros] = await redis.admin().time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    await redis.admin().zadd('rlock_rwlock_writers:{crashed-writer}', now + 1_500, 'dead:1:write');
    const reader = client.getReadWriteLock('crashed-writer').readLock();
    expect(await reader.tryLock()).toBe(false);
    const { value, ms } = await timed(reader.tryLock(10_000));
    expect(value).toBe(true);
    expect(ms).toBeLessThan(3_000);
  });

  /** Every key of the read-write lock `name` (the client registry and the like name no lock). */
  const keysOfName = async (name: string): Promise<string[]> =>
    (await redis.everyMaster((node) => node.keys(`*${name}*`))).flat();

  /** Keys of `name` that would stay forever. */
  const withoutTtl = async (name: string): Promise<string[]> => {
    const keys = await keysOfName(name);
    const ttls = await Promise.all(keys.map((key) => redis.admin().pttl(key)));
    return keys.filter((_, i) => ttls[i] === -1);
  };

  test('nothing of a preferring name stays once it is idle, whichever way its holders and waiters left', async () => {
    const name = 'idle-preference';
    const client = redis.client({ watchdogTimeout: 1_000 });
    const preferring = (): ReturnType<typeof client.getReadWriteLock> =>
      client.getReadWriteLock(name, { writerPreference: true });
    const reader = client.getReadWriteLock(name).readLock();

    // Released: the preference goes with the lock.
    await preferring().writeLock().lock();
    expect(await redis.admin().pttl(`rlock_rwlock_writer_preference:{${name}}`)).toBeGreaterThan(0);
    await preferring().writeLock().forceUnlock();
    expect(await keysOfName(name)).toEqual([]);
    await preferring()
      .writeLock()
      .withLock(() => undefined);
    expect(await keysOfName(name)).toEqual([]);

    // A waiting writer that timed out, then one that was aborted, behind a reader who then leaves.
    await reader.lock();
    expect(await preferring().writeLock().tryLock(300)).toBe(false);
    expect(await withoutTtl(name)).toEqual([]);
    const controller = new AbortController();
    const aborted = preferring().writeLock().lock({ signal: controller.signal });
    await sleep(200);
    controller.abort(new Error('enough'));
    await expect(aborted).rejects.toThrow('enough');
    expect(await withoutTtl(name)).toEqual([]);
    await reader.unlock();
    expect(await keysOfName(name)).toEqual([]);

    // A waiting writer whose process was killed: its place and the preference lapse.
    await reader.lock();
    const dead = startWorker([String(redis.port()), 'wait', name, '1'], {
      LOCK_KIND: 'write',
      WRITER_PREFERENCE: '1',
      WATCHDOG_TIMEOUT: '1000',
    });
    expect(await dead.firstMessage).toBe('started');
    await eventually(
      'the worker waits in line',
      async () => (await redis.admin().zcard(`rlock_rwlock_writers:{${name}}`)) === 1,
    );
    dead.child.kill('SIGKILL');
    await reader.unlock();
    expect(await withoutTtl(name)).toEqual([]);

    // A reader whose lease ran out, with a writer that gave up waiting for it.
    await reader.lock(600);
    expect(await preferring().writeLock().tryLock(200)).toBe(false);
    expect(await withoutTtl(name)).toEqual([]);

    // Every lease and place here is at most watchdogTimeout (1 s): nothing outlives it.
    await sleep(1_200);
    expect(await keysOfName(name)).toEqual([]);
  }, 30_000);

  test('the preference holds for every client while the name is in use, past many leases', async () => {
    const name = 'long-use';
    const holders = redis.client({ watchdogTimeout: 600 });
    const others = redis.client({ watchdogTimeout: 600 });
    const preference = `rlock_rwlock_writer_preference:{${name}}`;
    // Set once by a single attempt of a preferring writer, while readers (renewed by the watchdog) hold.
    const reader = holders.getReadWriteLock(name).readLock();
    await reader.lock();
    expect(await holders.getReadWriteLock(name, { writerPreference: true }).writeLock().tryLock()).toBe(
      false,
    );
    await sleep(2_000);
    expect(await redis.admin().pttl(preference)).toBeGreaterThan(0);
    // A plain writer of another client waits in line, so new readers queue behind it.
    const writer = others.getReadWriteLock(name).writeLock();
    const writing = writer.tryLock(10_000);
    await eventually(
      'the plain writer waits in line',
      async () => (await redis.admin().zcard(`rlock_rwlock_writers:{${name}}`)) === 1,
    );
    expect(await others.getReadWriteLock(name).readLock().tryLock()).toBe(false);
    await reader.unlock();
    expect(await writing).toBe(true);
    // The same through a long write hold.
    await sleep(2_000);
    expect(await redis.admin().pttl(preference)).toBeGreaterThan(0);
    await writer.unlock();
    expect(await keysOfName(name)).toEqual([]);
  }, 30_000);

  test('a waiting writer keeps its place for as long as it waits, beyond one lease', async () => {
    const client = redis.client({ watchdogTimeout: 900 });
    const rw = client.getReadWriteLock('long-wait', { writerPreference: true });
    const reader = client.getReadWriteLock('long-wait').readLock();
    await reader.lock();
    const writing = rw.writeLock().tryLock(10_000);
    await sleep(2_000);
    expect(await client.getReadWriteLock('long-wait').readLock().tryLock()).toBe(false);
    await reader.unlock();
    expect(await writing).toBe(true);
  });
});
