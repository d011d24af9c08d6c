import type { LockLostEvent } from '../../src';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';

describe('watchdog', () => {
  const redis = useRedis();

  test('keeps a lock taken without leaseTime for several periods', async () => {
    const client = redis.client({ watchdogTimeout: 600 });
    const lock = client.getLock('kept');
    await lock.lock();
    await sleep(2_000);
    expect(await lock.isHeldByCurrentTask()).toBe(true);
    const ttl = await lock.remainTimeToLive();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
    await lock.unlock();
  });

  test('does not renew a lock taken with a leaseTime', async () => {
    const client = redis.client({ watchdogTimeout: 600 });
    await client.getLock('fixed').lock(700);
    await sleep(900);
    expect(await client.getLock('fixed').isLocked()).toBe(false);
  });

  test('renews 250 locks with one script call per 100 locks', async () => {
    const client = redis.client({ watchdogTimeout: 900 });
    // One hash tag: on a cluster too, all 250 share a slot and so may share a script call.
    const locks = Array.from({ length: 250 }, (_, i) => client.getLock(`{many}:${i}`));
    await Promise.all(locks.map((lock) => lock.lock()));
    const admin = redis.admin();
    await sleep(100);
    await redis.resetStats();
    await sleep(1_000); // about three periods of 300 ms
    // ioredis sends a script's first call on a connection as EVAL, later ones as EVALSHA.
    const renewalCalls = await redis.scriptCalls();
    expect(renewalCalls).toBeGreaterThanOrEqual(6);
    expect(renewalCalls).toBeLessThanOrEqual(12);
    expect(renewalCalls % 3).toBe(0);
    expect(await admin.exists(...locks.map((lock) => lock.name))).toBe(250);
  });

  test('reports a lock deleted behind its back and aborts the withLock signal', async () => {
    const client = redis.client({ watchdogTimeout: 600 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    let aborted: unknown;
    const run = client.getLock('stolen').withLock(async ({ signal }) => {
      await redis.admin().del('stolen');
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      aborted = signal.reason;
    });
    await expect(run).rejects.toMatchObject({ code: 'ERR_LOCK_NOT_HELD' });
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ name: 'stolen' });
    expect(lost[0]?.reason).toMatch(/refused/);
    expect(aborted).toMatchObject({ code: 'ERR_LOCK_LOST' });
  });

  test('keeps trying through a stall shorter than the lease', async () => {
    const client = redis.client({ watchdogTimeout: 1_500 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    const lock = client.getLock('stall');
    await lock.lock();
    await sleep(450);
    await redis.pauseWrites(700);
    await sleep(1_500);
    expect(lost).toEqual([]);
    expect(await lock.isHeldByCurrentTask()).toBe(true);
    await lock.unlock();
  });

  test('reports the loss when renewals fail until the lease could have expired', async () => {
    const client = redis.client({ watchdogTimeout: 600 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    // Kept in a variable: a handle collected while it holds is orphaned, a loss of another kind.
    const lock = client.getLock('outage');
    await lock.lock();
    await redis.pauseWrites(1_500);
    await eventually('lockLost', () => lost.length === 1, 1_400);
    expect(lost[0]?.reason).toMatch(/expired/);
    await sleep(300);
    expect(await lock.isHeldByCurrentTask()).toBe(false);
  });

  test('a renewal in flight when unlock is sent neither resurrects the lock nor reports it lost', async () => {
    const client = redis.client({ watchdogTimeout: 1_500 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    const lock = client.getLock('in-flight');
    await lock.lock();
    // Hold every write back across the renewal due at 500 ms, so it queues up in front of the release.
    await sleep(400);
    await redis.pauseWrites(400);
    await sleep(200);
    await lock.unlock();
    await sleep(1_200);
    expect(await redis.admin().exists('in-flight')).toBe(0);
    expect(lost).toEqual([]);
  });

  test('a force-released lock is reported lost to its holder and not renewed', async () => {
    const client = redis.client({ watchdogTimeout: 300 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    await client.getLock('forced').lock();
    expect(await client.getLock('forced').forceUnlock()).toBe(true);
    await sleep(700);
    expect(await redis.admin().exists('forced')).toBe(0);
    expect(lost.map((event) => event.reason)).toEqual(['forceUnlock() deleted it']);
  });

  test('a holder stalled past its lease learns of it on its next call, before anything is sent', async () => {
    const client = redis.client();
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    const lock = client.getLock('stalled');
    const run = lock.withLock(
      async ({ signal }) => {
        const until = Date.now() + 400;
        while (Date.now() < until); // the event loop is stuck: no timer can tell the holder
        const query = lock.getHoldCount();
        expect(signal.aborted).toBe(true);
        expect(lost.map((event) => event.reason)).toEqual([expect.stringMatching(/not running/)]);
        await query;
      },
      { leaseTime: 300 },
    );
    await expect(run).rejects.toMatchObject({ code: 'ERR_LOCK_NOT_HELD' });
  });
});
