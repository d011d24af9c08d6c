import { FENCED_WRITE } from '../helpers/fenced-store';
import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

describe('fenced lock', () => {
  const redis = useRedis();

  test('every acquisition, re-entries included, takes a larger token', async () => {
    const client = redis.client();
    const lock = client.getFencedLock('fenced');
    const first = await lock.lockAndGetToken();
    const reentry = await lock.lockAndGetToken();
    expect(reentry).toBeGreaterThan(first);
    expect(await lock.getToken()).toBe(reentry);
    await lock.unlock();
    await lock.unlock();
    const other = client.getFencedLock('fenced');
    const next = await other.tryLockAndGetToken();
    expect(next).toBeGreaterThan(reentry);
    expect(Number.isSafeInteger(next)).toBe(true);
  });

  test('tryLockAndGetToken answers null when held elsewhere, and honours waitTime and leaseTime', async () => {
    const client = redis.client();
    const holder = client.getFencedLock('fenced-try');
    await holder.lockAndGetToken(300);
    const waiter = client.getFencedLock('fenced-try');
    expect(await waiter.tryLockAndGetToken()).toBeNull();
    const started = performance.now();
    const token = await waiter.tryLockAndGetToken(2_000, 500);
    expect(token).not.toBeNull();
    expect(performance.now() - started).toBeGreaterThan(200);
    const ttl = await waiter.remainTimeToLive();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(500);
  });

  test('withLock hands the token to the callback', async () => {
    const lock = redis.client().getFencedLock('fenced-with');
    const token = await lock.withLock(({ token }) => token);
    expect(token).toBe(await lock.getToken());
  });

  test('keeps Redisson RFencedLock layout: a counter at redisson_lock_token:{name}', async () => {
    const lock = redis.client().getFencedLock('fenced-layout');
    const token = await lock.lockAndGetToken();
    expect(await redis.admin().get('redisson_lock_token:{fenced-layout}')).toBe(String(token));
    // A Redisson client increments the same counter: the next rlock token is still larger.
    await redis.admin().incr('redisson_lock_token:{fenced-layout}');
    await lock.unlock();
    expect(await lock.lockAndGetToken()).toBeGreaterThan(token + 1);
  });

  test('a store that checks tokens refuses a stale holder', async () => {
    const client = redis.client();
    const admin = redis.admin();
    const stale = client.getFencedLock('fenced-store');
    const staleToken = await stale.lockAndGetToken(200);
    await sleep(300); // the lease runs out while the holder "pauses"
    const fresh = client.getFencedLock('fenced-store');
    const freshToken = await fresh.lockAndGetToken();
    expect(await admin.eval(FENCED_WRITE, 1, 'store', freshToken, 'fresh')).toBe(1);
    expect(await admin.eval(FENCED_WRITE, 1, 'store', staleToken, 'stale')).toBe(0);
    expect(await admin.hget('store', 'value')).toBe('fresh');
  });
});
