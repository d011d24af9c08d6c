import { ClientClosedError, LockLostError } from '../../src';
import { useRedis } from '../helpers/setup';
import { eventually, sleep, timed } from '../helpers/wait';
import { startWorker } from '../helpers/workers';

/**
 * close({ timeout }) at a deploy: no new acquisitions, held signals aborted, running withLock
 * bodies given `timeout` to finish, then every hold still there released so that waiters
 * elsewhere take over at once instead of waiting out the lease.
 */
describe('closing a client', () => {
  const redis = useRedis();

  test('a running withLock body may finish and release; a waiter in another process takes over at once', async () => {
    const client = redis.client();
    let signal: AbortSignal | undefined;
    const body = client.getLock('deploy').withLock(async (held) => {
      signal = held.signal;
      // Works until told to stop, then takes a moment to finish cleanly.
      await new Promise((resolve) => held.signal.addEventListener('abort', resolve));
      await sleep(300);
      return 'finished';
    });
    await eventually('held', () => signal !== undefined);
    const waiter = startWorker([String(redis.port()), 'wait', 'deploy', '1']);
    expect(await waiter.firstMessage).toBe('started');
    await sleep(200);
    const closing = timed(client.close({ timeout: 2_000 }));
    await eventually('signal aborted', () => signal?.aborted === true);
    expect(signal?.reason).toBeInstanceOf(LockLostError);
    expect(signal?.reason).toMatchObject({ code: 'ERR_LOCK_LOST', lostCode: 'client-closed' });
    expect(await body).toBe('finished');
    const closed = await closing;
    const closedAt = performance.now();
    expect(closed.ms).toBeLessThan(1_000);
    expect(await waiter.nextMessage()).toBe('done');
    expect(performance.now() - closedAt).toBeLessThan(500);
  }, 30_000);

  test('a body that overruns the timeout: its lock is released when close() resolves', async () => {
    const client = redis.client();
    const other = redis.client();
    let signal: AbortSignal | undefined;
    const body = client.getLock('overrun').withLock(async (held) => {
      signal = held.signal;
      await sleep(1_500);
    });
    body.catch(() => undefined);
    await eventually('held', () => signal !== undefined);
    const closing = await timed(client.close({ timeout: 300 }));
    expect(closing.ms).toBeGreaterThanOrEqual(290);
    expect(closing.ms).toBeLessThan(1_000);
    expect(await redis.admin().exists('overrun')).toBe(0);
    expect(await other.getLock('overrun').tryLock()).toBe(true);
    // The body learns it ran past the close: its withLock rejects once it ends.
    await expect(body).rejects.toBeInstanceOf(ClientClosedError);
  }, 30_000);

  test('holds taken by hand are released too, and a fair lock passes to its next waiter', async () => {
    const client = redis.client();
    const other = redis.client();
    const plain = client.getLock('by-hand');
    await plain.lock();
    await plain.lock();
    const timed5 = client.getLock('by-hand-lease');
    await timed5.lock(60_000);
    const fair = client.getFairLock('fair-close');
    await fair.lock();
    const next = other.getFairLock('fair-close').tryLock(5_000);
    await sleep(200);
    await client.close();
    const closedAt = performance.now();
    expect(await redis.admin().exists('by-hand', 'by-hand-lease')).toBe(0);
    expect(await next).toBe(true);
    expect(performance.now() - closedAt).toBeLessThan(500);
  });

  test('a wait pending at close() ends at once; close() twice is one close; its options are checked', async () => {
    const holder = redis.client();
    const client = redis.client();
    await holder.getLock('pending').lock();
    const handle = client.getLock('pending');
    const waiting = timed(handle.lock());
    await sleep(100);
    await expect(client.close({ timeout: -1 })).rejects.toThrow(/^timeout must be/);
    await expect(client.close({ timout: 5 } as never)).rejects.toThrow(/did you mean "timeout"/);
    const first = client.close();
    expect(client.close()).toBe(first);
    await first;
    const outcome = await waiting;
    expect(outcome.error).toBeInstanceOf(ClientClosedError);
    expect(outcome.ms).toBeLessThan(300);
    await expect(handle.unlock()).rejects.toBeInstanceOf(ClientClosedError);
    expect(() => client.getLock('pending')).toThrow(ClientClosedError);
  });

  test('every ClientClosedError of a lock, semaphore or latch names it and the operation', async () => {
    const holder = redis.client();
    const client = redis.client();
    await holder.getLock('cc-lock').lock();
    await holder.getFairLock('cc-fair').lock();
    await holder.getReadWriteLock('cc-rw').writeLock().lock();
    await holder.getSemaphore('cc-sem').trySetPermits(0);
    await holder.getPermitExpirableSemaphore('cc-exp').trySetPermits(0);
    await holder.getCountDownLatch('cc-latch').trySetCount(1);
    const lock = client.getLock('cc-lock');
    const semaphore = client.getSemaphore('cc-sem');
    const latch = client.getCountDownLatch('cc-latch');
    const readLock = client.getReadWriteLock('cc-rw2').readLock();
    const group = client.getMultiLock(client.getLock('cc-lock'), client.getLock('cc-free'));
    const settle = async (work: () => Promise<unknown>): Promise<unknown> => {
      try {
        await work();
        return 'resolved';
      } catch (error) {
        const { name, lockName, operation } = error as ClientClosedError;
        return { name, lockName, operation };
      }
    };
    // Pending when close() is called: each ended by it.
    const pending = {
      lock: settle(() => lock.lock()),
      fair: settle(() => client.getFairLock('cc-fair').tryLock(10_000)),
      read: settle(() => client.getReadWriteLock('cc-rw').readLock().lock()),
      withLock: settle(() => client.getLock('cc-lock').withLock(() => 1)),
      semaphore: settle(() => semaphore.acquire()),
      expirable: settle(() => client.getPermitExpirableSemaphore('cc-exp').acquire()),
      latch: settle(() => latch.await()),
      group: settle(() => group.tryLock(10_000)),
    };
    await sleep(200);
    await client.close();
    // Called after close().
    const after = {
      tryLock: settle(() => lock.tryLock()),
      unlock: settle(() => lock.unlock()),
      isLocked: settle(() => lock.isLocked()),
      getHoldCount: settle(() => lock.getHoldCount()),
      forceUnlock: settle(() => lock.forceUnlock()),
      hold: settle(() => lock.hold()),
      readIsLocked: settle(() => readLock.isLocked()),
      semaphoreRelease: settle(() => semaphore.release()),
      availablePermits: settle(() => semaphore.availablePermits()),
      withPermits: settle(() => semaphore.withPermits(1, () => 1)),
      countDown: settle(() => latch.countDown()),
      await: settle(() => latch.await({ waitTime: 100 })),
      getLock: settle(async () => client.getLock('cc-new')),
      groupTryLock: settle(() => group.tryLock()),
    };
    const named = (lockName: string, operation: string): unknown => ({
      name: 'ClientClosedError',
      lockName,
      operation,
    });
    expect(
      Object.fromEntries(await Promise.all(Object.entries(pending).map(async ([k, v]) => [k, await v]))),
    ).toEqual({
      lock: named('cc-lock', 'acquire'),
      fair: named('cc-fair', 'acquire'),
      read: named('cc-rw', 'acquire'),
      withLock: named('cc-lock', 'acquire'),
      semaphore: named('cc-sem', 'acquire'),
      expirable: named('cc-exp', 'acquire'),
      latch: named('cc-latch', 'await'),
      group: named(group.name, 'acquire'),
    });
    expect(
      Object.fromEntries(await Promise.all(Object.entries(after).map(async ([k, v]) => [k, await v]))),
    ).toEqual({
      tryLock: named('cc-lock', 'acquire'),
      unlock: named('cc-lock', 'release'),
      isLocked: named('cc-lock', 'isLocked'),
      getHoldCount: named('cc-lock', 'getHoldCount'),
      forceUnlock: named('cc-lock', 'forceUnlock'),
      hold: named('cc-lock', 'acquire'),
      readIsLocked: named('cc-rw2', 'isLocked'),
      semaphoreRelease: named('cc-sem', 'release'),
      availablePermits: named('cc-sem', 'availablePermits'),
      withPermits: named('cc-sem', 'acquire'),
      countDown: named('cc-latch', 'countDown'),
      await: named('cc-latch', 'await'),
      getLock: named('cc-new', 'getLock'),
      groupTryLock: named(group.name, 'acquire'),
    });
  });

  test('close() called inside a withLock body does not wait for that body', async () => {
    const client = redis.client();
    const outcome = await timed(
      client.getLock('closing-inside').withLock(async () => {
        const closing = await timed(client.close({ timeout: 2_000 }));
        return closing.ms;
      }),
    );
    // The body's lock was released by close() before the body returned: withLock says so.
    expect(outcome.error).toMatchObject({
      code: 'ERR_CLIENT_CLOSED',
      message: expect.stringMatching(/released/),
    });
    expect(outcome.ms).toBeLessThan(1_000);
    expect(await redis.admin().exists('closing-inside')).toBe(0);
  });

  test('holds of explicit owner ids stay in Redis at close(): another worker may release them', async () => {
    const client = redis.client();
    await client.runInTask(() => client.getLock('job:5').lock(60_000), { ownerId: 'jobs:5' });
    await client.close();
    expect(await redis.admin().hget('job:5', 'jobs:5')).toBe('1');
    const finisher = redis.client();
    await finisher.runInTask(() => finisher.getLock('job:5').unlock(), { ownerId: 'jobs:5' });
    expect(await redis.admin().exists('job:5')).toBe(0);
  });

  test('SIGTERM recipe: the process closes its client and a waiter elsewhere gets the lock at once', async () => {
    const worker = startWorker([String(redis.port()), 'sigterm', 'sigterm-lock', '5000']);
    expect(await worker.firstMessage).toBe('locked');
    const waiter = redis.client();
    const waiting = timed(waiter.getLock('sigterm-lock').tryLock(10_000));
    await sleep(200);
    const exited = new Promise<number | null>((resolve) => worker.child.once('exit', resolve));
    const signalledAt = performance.now();
    worker.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const outcome = await waiting;
    expect(outcome.value).toBe(true);
    // Released by the closing process, not after the 30 s watchdog lease.
    expect(performance.now() - signalledAt).toBeLessThan(1_500);
  }, 30_000);
});
