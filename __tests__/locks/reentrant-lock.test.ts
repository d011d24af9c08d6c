import { LockNotHeldError } from '../../src';
import { isHoldMark } from '../../src/protocol/keys';
import { holdCounts, holderIds } from '../helpers/holders';
import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

// The scenarios of Redisson's RedissonLockTest, in milliseconds and Promises.
describe('RLock', () => {
  const redis = useRedis();

  test('lock then unlock leaves no lock behind', async () => {
    const lock = redis.client().getLock('basic');
    await lock.lock();
    expect(await lock.isLocked()).toBe(true);
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
    expect(await redis.admin().exists('basic')).toBe(0);
  });

  test('stores the hold as a Redisson hash: field <clientId>:<owner>, value the hold count', async () => {
    const client = redis.client({ clientId: 'node-service-1' });
    const lock = client.getLock('layout');
    await lock.lock();
    await lock.lock();
    const hash = await holdCounts(redis.admin(), 'layout');
    expect(Object.keys(hash)).toHaveLength(1);
    // The label, a random part that makes it unique to this client, and the owner number.
    expect(Object.keys(hash)[0]).toMatch(/^node-service-1\/[0-9a-f]{16}:\d+$/);
    expect(Object.keys(hash)[0]).toBe(`${client.id}:${/:(\d+)$/.exec(Object.keys(hash)[0] as string)?.[1]}`);
    expect(Object.values(hash)).toEqual(['2']);
  });

  test('a hold mark is told from an owner id', () => {
    expect(isHoldMark('rlock_mark:0f3c2a8e-1c2d-4a5b-9e8f-123456789abc:7')).toBe(true);
    expect(isHoldMark('0f3c2a8e-1c2d-4a5b-9e8f-123456789abc:7')).toBe(false);
    expect(isHoldMark('orders:job-1')).toBe(false);
  });

  test('each hold is marked in the lock hash beside the count; a released lock leaves no key', async () => {
    const admin = redis.admin();
    const lock = redis.client().getLock('marks');
    await lock.lock();
    await lock.unlock();
    expect(await admin.keys('*marks*')).toEqual([]);

    await lock.lock();
    await lock.lock();
    const requestNumber = (mark: string): number => Number(mark.slice(mark.lastIndexOf(':') + 1));
    const [outer, inner] = Object.keys(await admin.hgetall('marks'))
      .filter(isHoldMark)
      .sort((a, b) => requestNumber(a) - requestNumber(b)) as [string, string];
    expect(outer).toMatch(/^rlock_mark:.+:\d+$/);
    expect(inner).toBeDefined();
    // Short fields keep the hash in Redis' compact encoding.
    expect(await admin.object('ENCODING', 'marks')).toBe('listpack');
    await lock.unlock();
    // The inner hold's mark gives way to a record of its release under the request's latch key, so
    // that a re-sent copy of that release does not take the outer hold too.
    expect(Object.keys(await admin.hgetall('marks')).filter(isHoldMark)).toEqual([outer]);
    expect(await admin.get(`rlock_hold_latch:{marks}:${inner.slice('rlock_mark:'.length)}`)).toBe('r0');
    await lock.unlock();
    expect(await admin.exists('marks')).toBe(0);
  });

  test('a default owner id is Redisson-shaped: <uuid>:<n>', async () => {
    const client = redis.client();
    await client.getLock('uuid-layout').lock();
    const [field] = await holderIds(redis.admin(), 'uuid-layout');
    expect(field).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:\d+$/);
  });

  test('hold count follows re-entry and unlock', async () => {
    const lock = redis.client().getLock('count');
    expect(await lock.getHoldCount()).toBe(0);
    await lock.lock();
    await lock.lock();
    await lock.lock();
    expect(await lock.getHoldCount()).toBe(3);
    await lock.unlock();
    expect(await lock.getHoldCount()).toBe(2);
    await lock.unlock();
    await lock.unlock();
    expect(await lock.getHoldCount()).toBe(0);
    expect(await lock.isLocked()).toBe(false);
  });

  test('another owner sees the lock as locked but not held by it', async () => {
    const client = redis.client();
    const mine = client.getLock('seen');
    const theirs = client.getLock('seen');
    await mine.lock();
    expect(await theirs.isLocked()).toBe(true);
    expect(await theirs.isHeldByCurrentTask()).toBe(false);
    expect(await theirs.getHoldCount()).toBe(0);
    expect(await mine.isHeldByCurrentTask()).toBe(true);
  });

  test('unlock by a non-owner is refused and leaves the lock held', async () => {
    const client = redis.client();
    const owner = client.getLock('refuse');
    const stranger = client.getLock('refuse');
    await owner.lock();
    const error = await stranger.unlock().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotHeldError);
    expect((error as LockNotHeldError).code).toBe('ERR_LOCK_NOT_HELD');
    expect(await owner.isHeldByCurrentTask()).toBe(true);
  });

  test('unlock of a lock never taken is refused', async () => {
    await expect(redis.client().getLock('never').unlock()).rejects.toBeInstanceOf(LockNotHeldError);
  });

  test('two handles of one name are two owners; one handle re-enters', async () => {
    const client = redis.client();
    const a = client.getLock('handles');
    const b = client.getLock('handles');
    await a.lock();
    expect(await b.tryLock()).toBe(false);
    expect(await a.tryLock()).toBe(true);
    expect(await a.getHoldCount()).toBe(2);
  });

  test('tryLock() makes one attempt and never waits', async () => {
    const client = redis.client();
    await client.getLock('once').lock();
    const started = performance.now();
    expect(await client.getLock('once').tryLock()).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });

  test('tryLock(wait) gives up after about waitTime', async () => {
    const client = redis.client();
    await client.getLock('wait').lock();
    const started = performance.now();
    expect(await client.getLock('wait').tryLock(300)).toBe(false);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(295);
    expect(waited).toBeLessThan(1_500);
  });

  test('tryLock(wait) acquires as soon as the holder releases', async () => {
    const client = redis.client();
    const holder = client.getLock('handover');
    await holder.lock();
    const waiter = client.getLock('handover');
    const result = waiter.tryLock(10_000);
    await sleep(200);
    const releasedAt = performance.now();
    await holder.unlock();
    expect(await result).toBe(true);
    expect(performance.now() - releasedAt).toBeLessThan(1_000);
    expect(await waiter.isHeldByCurrentTask()).toBe(true);
  });

  test('a lease ends the lock by itself, and the stale holder cannot unlock', async () => {
    const client = redis.client();
    const lock = client.getLock('lease');
    await lock.lock(300);
    const ttl = await lock.remainTimeToLive();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
    await sleep(450);
    expect(await lock.isLocked()).toBe(false);
    await expect(lock.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
  });

  test('a waiter gets a lock whose lease ran out, within the holder ttl', async () => {
    const client = redis.client();
    await client.getLock('expire-wait').lock(400);
    const started = performance.now();
    expect(await client.getLock('expire-wait').tryLock(5_000)).toBe(true);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThan(300);
    expect(waited).toBeLessThan(1_500);
  });

  test('tryLock(wait, lease) acquires with that lease', async () => {
    const lock = redis.client().getLock('wait-lease');
    expect(await lock.tryLock(100, 2_000)).toBe(true);
    const ttl = await lock.remainTimeToLive();
    expect(ttl).toBeGreaterThan(1_500);
    expect(ttl).toBeLessThanOrEqual(2_000);
  });

  test('remainTimeToLive: lease, watchdog, -1 without expiry, -2 when free', async () => {
    const client = redis.client({ watchdogTimeout: 5_000 });
    const lock = client.getLock('ttl');
    expect(await lock.remainTimeToLive()).toBe(-2);
    await lock.lock();
    const watchdogTtl = await lock.remainTimeToLive();
    expect(watchdogTtl).toBeGreaterThan(4_000);
    expect(watchdogTtl).toBeLessThanOrEqual(5_000);
    await lock.unlock();
    await lock.lock(1_000);
    expect(await lock.remainTimeToLive()).toBeLessThanOrEqual(1_000);
    await lock.unlock();
    await redis.admin().hset('ttl', 'someone:1', '1');
    expect(await lock.remainTimeToLive()).toBe(-1);
  });

  test('a short inner lease does not cut off the outer hold', async () => {
    const lock = redis.client({ watchdogTimeout: 5_000 }).getLock('inner-lease');
    await lock.lock();
    await lock.lock(100);
    await sleep(250);
    expect(await lock.getHoldCount()).toBe(2);
  });

  test('forceUnlock frees a lock held by anyone and wakes its waiter', async () => {
    const client = redis.client();
    const other = redis.client();
    await client.getLock('force').lock();
    const waiter = other.getLock('force');
    const waiting = waiter.tryLock(10_000);
    await sleep(100);
    expect(await other.getLock('force').forceUnlock()).toBe(true);
    expect(await waiting).toBe(true);
    expect(await other.getLock('force').forceUnlock()).toBe(true);
    expect(await other.getLock('force').forceUnlock()).toBe(false);
  });

  test('a lock without expiry is waited for until its release message', async () => {
    const client = redis.client();
    await redis.admin().hset('no-expiry', 'someone:1', '1');
    const waiting = client.getLock('no-expiry').tryLock(5_000);
    await sleep(200);
    await client.getLock('no-expiry').forceUnlock();
    expect(await waiting).toBe(true);
  });

  test('concurrent owners in one process keep a counter exact', async () => {
    const client = redis.client();
    const admin = redis.admin();
    let inside = 0;
    let overlaps = 0;
    const worker = async (): Promise<void> => {
      for (let i = 0; i < 10; i += 1) {
        await client.getLock('counter').withLock(async () => {
          inside += 1;
          if (inside > 1) overlaps += 1;
          const value = Number((await admin.get('counter-value')) ?? 0);
          await sleep(1);
          await admin.set('counter-value', value + 1);
          inside -= 1;
        });
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(overlaps).toBe(0);
    expect(await admin.get('counter-value')).toBe('80');
  });
});
