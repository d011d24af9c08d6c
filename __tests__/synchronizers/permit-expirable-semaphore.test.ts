import { PermitNotHeldError } from '../../src';
import { expirableSemaphoreKeys } from '../../src/protocol/keys';
import { useRedis } from '../helpers/setup';
import { sleep, timed } from '../helpers/wait';

// The scenarios of Redisson's RedissonPermitExpirableSemaphoreTest, in milliseconds and Promises.
describe('RPermitExpirableSemaphore', () => {
  const redis = useRedis();

  test('acquire returns a 32-hex permit id kept in {name}:timeout; release gives it back', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:basic');
    expect(await semaphore.trySetPermits(2)).toBe(true);
    const id = await semaphore.acquire();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(await semaphore.availablePermits()).toBe(1);
    const keys = expirableSemaphoreKeys('pes:basic');
    expect(keys.timeouts).toBe('{pes:basic}:timeout');
    const members = await redis.admin().zrangeBuffer(keys.timeouts, 0, -1);
    expect(members.map((member) => member.toString('hex'))).toEqual([id]);
    await semaphore.release(id);
    expect(await semaphore.availablePermits()).toBe(2);
    expect(await redis.admin().zcard(keys.timeouts)).toBe(0);
  });

  test('an unknown or released permit is a PermitNotHeldError; tryRelease answers false', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:unknown');
    await semaphore.trySetPermits(1);
    const id = await semaphore.acquire();
    await semaphore.release(id);
    const error = await semaphore.release(id).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PermitNotHeldError);
    expect((error as PermitNotHeldError).code).toBe('ERR_PERMIT_NOT_HELD');
    expect(await semaphore.tryRelease('0'.repeat(32))).toBe(false);
    await expect(semaphore.release('nope')).rejects.toThrow(/permitId/);
    await expect(semaphore.release(5 as never)).rejects.toBeInstanceOf(TypeError);
  });

  test('an expired permit returns by itself and wakes a waiter at its expiry', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:expiry');
    await semaphore.trySetPermits(1);
    const id = await semaphore.acquire({ leaseTime: 600 });
    const waiting = timed(semaphore.tryAcquire({ waitTime: 10_000 }));
    const result = await waiting;
    expect(result.value).toMatch(/^[0-9a-f]{32}$/);
    expect(result.ms).toBeGreaterThan(400);
    expect(result.ms).toBeLessThan(3_000);
    expect(await semaphore.tryRelease(id)).toBe(false);
  });

  test('a release from another client wakes a waiter', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:wake');
    await semaphore.trySetPermits(1);
    const id = await semaphore.acquire();
    const waiting = timed(
      redis.client().getPermitExpirableSemaphore('pes:wake').tryAcquire({ waitTime: 20_000 }),
    );
    await sleep(300);
    await semaphore.release(id);
    const result = await waiting;
    expect(result.value).toMatch(/^[0-9a-f]{32}$/);
    expect(result.ms).toBeLessThan(3_000);
  });

  test('updateLeaseTime keeps a permit longer; an expired one cannot be renewed', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:lease');
    await semaphore.trySetPermits(1);
    const id = await semaphore.acquire({ leaseTime: 400 });
    expect(await semaphore.updateLeaseTime(id, 10_000)).toBe(true);
    await sleep(700);
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await semaphore.updateLeaseTime(id, 200)).toBe(true);
    await sleep(500);
    expect(await semaphore.updateLeaseTime(id, 10_000)).toBe(false);
    expect(await semaphore.availablePermits()).toBe(1);
  });

  test('tryAcquire without waitTime makes one attempt; with waitTime it gives up in time', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:try');
    await semaphore.trySetPermits(1);
    expect(await semaphore.tryAcquire()).not.toBeNull();
    expect(await semaphore.tryAcquire()).toBeNull();
    const result = await timed(semaphore.tryAcquire({ waitTime: 300 }));
    expect(result.value).toBeNull();
    expect(result.ms).toBeLessThan(2_000);
  });

  test('an aborted wait rejects and takes nothing; addPermits wakes', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:abort');
    const controller = new AbortController();
    const waiting = semaphore.acquire({ signal: controller.signal });
    await sleep(200);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    const next = timed(semaphore.tryAcquire({ waitTime: 10_000, leaseTime: 5_000 }));
    await sleep(200);
    await semaphore.addPermits(2);
    expect((await next).value).toMatch(/^[0-9a-f]{32}$/);
    expect(await semaphore.availablePermits()).toBe(1);
  });

  test('bad input is refused with errors naming the argument', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('pes:bad');
    await expect(semaphore.acquire({ leaseTime: -5 })).rejects.toThrow(/leaseTime/);
    await expect(semaphore.tryAcquire({ waitTime: 1.5 })).rejects.toThrow(/waitTime/);
    await expect(semaphore.trySetPermits(-1)).rejects.toThrow(/permits/);
    await expect(semaphore.updateLeaseTime('a'.repeat(32), Number.NaN)).rejects.toThrow(/leaseTime/);
    // A permit has no watchdog: -1 is a permit that never expires.
    await expect(semaphore.acquire({ leaseTime: 0 })).rejects.toThrow(/-1 \(never expires\)/);
    await expect(semaphore.updateLeaseTime('a'.repeat(32), 0)).rejects.toThrow(/-1 \(never expires\)/);
  });
});
