import { ClientClosedError, LockTimeoutError } from '../../src';
import { useRedis } from '../helpers/setup';
import { sleep, timed } from '../helpers/wait';

// The scenarios of Redisson's RedissonSemaphoreTest, in milliseconds and Promises.
describe('RSemaphore', () => {
  const redis = useRedis();

  test('trySetPermits sets the permits once; the count is a string at the name', async () => {
    const semaphore = redis.client().getSemaphore('sem:set');
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await semaphore.trySetPermits(3)).toBe(true);
    expect(await semaphore.trySetPermits(5)).toBe(false);
    expect(await semaphore.availablePermits()).toBe(3);
    expect(await redis.admin().get('sem:set')).toBe('3');
  });

  test('acquire, tryAcquire and release move permits; acquiring 0 succeeds at once', async () => {
    const semaphore = redis.client().getSemaphore('sem:basic');
    await semaphore.trySetPermits(2);
    await semaphore.acquire();
    expect(await semaphore.tryAcquire()).toBe(true);
    expect(await semaphore.tryAcquire()).toBe(false);
    expect(await semaphore.tryAcquire(0)).toBe(true);
    await semaphore.acquire(0);
    expect(await semaphore.availablePermits()).toBe(0);
    await semaphore.release(2);
    expect(await semaphore.tryAcquire({ permits: 2 })).toBe(true);
    expect(await semaphore.availablePermits()).toBe(0);
  });

  test('addPermits adds and takes away; drainPermits takes every available permit', async () => {
    const semaphore = redis.client().getSemaphore('sem:add');
    await semaphore.addPermits(5);
    await semaphore.addPermits(-2);
    expect(await semaphore.availablePermits()).toBe(3);
    expect(await semaphore.drainPermits()).toBe(3);
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await semaphore.drainPermits()).toBe(0);
    await semaphore.addPermits(-1);
    expect(await semaphore.availablePermits()).toBe(-1);
    expect(await semaphore.tryAcquire()).toBe(false);
  });

  test('a waiter is woken by a release from another client, not by polling', async () => {
    const semaphore = redis.client().getSemaphore('sem:wake');
    await semaphore.trySetPermits(0);
    const waiting = timed(semaphore.tryAcquire(2, 20_000));
    await sleep(300);
    await redis.resetStats();
    await sleep(700);
    // A sleeping waiter sends nothing.
    expect(await redis.scriptCalls()).toBe(0);
    const other = redis.client().getSemaphore('sem:wake');
    await other.release(1);
    await sleep(200);
    await other.release(1);
    const result = await waiting;
    expect(result.value).toBe(true);
    expect(result.ms).toBeLessThan(5_000);
    expect(await other.availablePermits()).toBe(0);
  });

  test('releases wake as many waiters as permits came back', async () => {
    const semaphore = redis.client().getSemaphore('sem:many');
    await semaphore.trySetPermits(0);
    let through = 0;
    const waits = Array.from({ length: 4 }, () =>
      semaphore.tryAcquire(1, 10_000).then((taken) => {
        through += 1;
        return taken;
      }),
    );
    await sleep(300);
    await redis.client().getSemaphore('sem:many').release(3);
    await sleep(1_500);
    expect(through).toBe(3);
    await semaphore.release(1);
    expect(await Promise.all(waits)).toEqual([true, true, true, true]);
  });

  test('a waiter for fewer permits is not held up behind one that needs more than came back', async () => {
    const semaphore = redis.client().getSemaphore('sem:mixed');
    await semaphore.trySetPermits(0);
    const big = semaphore.tryAcquire(2, 20_000);
    await sleep(200);
    const small = timed(semaphore.tryAcquire(1, 20_000));
    await sleep(300);
    await redis.client().getSemaphore('sem:mixed').release(1);
    const result = await small;
    expect(result.value).toBe(true);
    expect(result.ms).toBeLessThan(300 + 3_000);
    await semaphore.release(2);
    expect(await big).toBe(true);
  });

  test('tryAcquire gives up after waitTime', async () => {
    const semaphore = redis.client().getSemaphore('sem:timeout');
    const result = await timed(semaphore.tryAcquire({ permits: 1, waitTime: 300 }));
    expect(result.value).toBe(false);
    expect(result.ms).toBeGreaterThanOrEqual(290);
    expect(result.ms).toBeLessThan(2_000);
  });

  test('an aborted wait rejects with the reason and takes nothing', async () => {
    const semaphore = redis.client().getSemaphore('sem:abort');
    const controller = new AbortController();
    const waiting = semaphore.acquire(2, { signal: controller.signal });
    await sleep(200);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await semaphore.release(2);
    await sleep(300);
    expect(await semaphore.availablePermits()).toBe(2);
  });

  test('withPermits releases after fn, also when fn throws, and times out with LockTimeoutError', async () => {
    const semaphore = redis.client().getSemaphore('sem:with');
    await semaphore.trySetPermits(2);
    expect(await semaphore.withPermits(2, async () => semaphore.availablePermits())).toBe(0);
    expect(await semaphore.availablePermits()).toBe(2);
    await expect(
      semaphore.withPermits(1, () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await semaphore.availablePermits()).toBe(2);
    await semaphore.acquire(2);
    await expect(semaphore.withPermits(1, () => 'never', { waitTime: 200 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
  });

  test('N concurrent calls through withPermits never exceed the permits', async () => {
    const semaphore = redis.client().getSemaphore('sem:limit');
    await semaphore.trySetPermits(3);
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 12 }, () =>
        semaphore.withPermits(1, async () => {
          inside += 1;
          most = Math.max(most, inside);
          await sleep(30);
          inside -= 1;
        }),
      ),
    );
    expect(most).toBe(3);
    expect(await semaphore.availablePermits()).toBe(3);
  });

  test('close() ends waits with ClientClosedError and aborts withPermits bodies', async () => {
    const client = redis.client();
    const semaphore = client.getSemaphore('sem:close');
    await semaphore.trySetPermits(1);
    let aborted = false;
    const body = semaphore.withPermits(1, async ({ signal }) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      aborted = true;
    });
    await sleep(100);
    const waiting = semaphore.acquire();
    await sleep(100);
    await client.close();
    await expect(waiting).rejects.toBeInstanceOf(ClientClosedError);
    await body;
    expect(aborted).toBe(true);
    expect(await redis.client().getSemaphore('sem:close').availablePermits()).toBe(1);
  });

  test('close() gives back the permits of a withPermits body that outlasts its timeout', async () => {
    const client = redis.client();
    const semaphore = client.getSemaphore('sem:close-overrun');
    await semaphore.trySetPermits(2);
    const body = semaphore.withPermits(2, () => sleep(1_500).then(() => 'done'));
    await sleep(100);
    await client.close({ timeout: 200 });
    // Back at close, as a lock's hold is, so that waiters elsewhere go on.
    expect(await redis.client().getSemaphore('sem:close-overrun').availablePermits()).toBe(2);
    // The body learns, when it ends, that it ran past close() without its permits.
    await expect(body).rejects.toBeInstanceOf(ClientClosedError);
    expect(await redis.client().getSemaphore('sem:close-overrun').availablePermits()).toBe(2);
  });

  test('bad input is refused with errors naming the argument', async () => {
    const semaphore = redis.client().getSemaphore('sem:bad');
    await expect(semaphore.acquire(-1)).rejects.toThrow(/permits/);
    await expect(semaphore.acquire(1.5)).rejects.toBeInstanceOf(RangeError);
    await expect(semaphore.tryAcquire('2' as unknown as number)).rejects.toBeInstanceOf(TypeError);
    await expect(semaphore.tryAcquire(1, Number.NaN)).rejects.toThrow(/waitTime/);
    await expect(semaphore.tryAcquire({ permits: 1, waittime: 5 } as never)).rejects.toThrow(/waitTime/);
    await expect(semaphore.release(-2)).rejects.toThrow(/permits/);
    await expect(semaphore.withPermits(1, 'x' as never)).rejects.toThrow(/fn/);
    expect(() => redis.client().getSemaphore('')).toThrow(/name/);
  });

  test('keyPrefix: keys and channel live under the prefix, and waiters still wake', async () => {
    const prefixed = redis.client({}, redis.connect({ keyPrefix: 'app:' }));
    const semaphore = prefixed.getSemaphore('sem:prefix');
    await semaphore.trySetPermits(0);
    expect(await redis.admin().get('app:sem:prefix')).toBe('0');
    const waiting = timed(semaphore.tryAcquire(1, 10_000));
    await sleep(300);
    await prefixed.getSemaphore('sem:prefix').release();
    const result = await waiting;
    expect(result.value).toBe(true);
    expect(result.ms).toBeLessThan(3_000);
  });
});
