import { useRedis } from '../helpers/setup';
import { startWorker } from '../helpers/workers';

describe('semaphores and latches across processes', () => {
  const redis = useRedis();
  const worker = (args: string[]) => startWorker([String(redis.port()), ...args], {}, 'synchronizer-worker');

  test('4 worker processes through a 2-permit semaphore: never more than 2 inside, every permit back', async () => {
    await redis.client().getSemaphore('procs:sem').trySetPermits(2);
    const workers = Array.from({ length: 4 }, () => worker(['permits', 'procs:sem', '25', '2']));
    expect(await Promise.all(workers.map((w) => w.firstMessage))).toEqual(['done', 'done', 'done', 'done']);
    expect(await redis.admin().get('procs:sem:overflows')).toBeNull();
    expect(await redis.client().getSemaphore('procs:sem').availablePermits()).toBe(2);
  }, 60_000);

  test('waiting for K workers: the latch opens when the last of 3 processes counts down', async () => {
    const latch = redis.client().getCountDownLatch('procs:latch');
    await latch.trySetCount(3);
    const waiter = worker(['await', 'procs:latch']);
    expect(await waiter.firstMessage).toBe('started');
    const counters = Array.from({ length: 3 }, () => worker(['count-down', 'procs:latch']));
    expect(await Promise.all(counters.map((w) => w.firstMessage))).toEqual(['done', 'done', 'done']);
    expect(await waiter.nextMessage()).toBe('done');
    expect(await latch.getCount()).toBe(0);
  }, 60_000);

  test('a permit of a killed process returns when its lease ends, and a waiter here gets it', async () => {
    const semaphore = redis.client().getPermitExpirableSemaphore('procs:pes');
    await semaphore.trySetPermits(1);
    const holder = worker(['expirable', 'procs:pes', '1500']);
    expect(await holder.firstMessage).toBe('acquired');
    holder.child.kill('SIGKILL');
    const started = performance.now();
    expect(await semaphore.tryAcquire({ waitTime: 10_000 })).toMatch(/^[0-9a-f]{32}$/);
    expect(performance.now() - started).toBeLessThan(1_500 + 1_000);
  }, 30_000);
});
