import { LockClient, RedisUnavailableError } from '../../src';
import { startRedis, type RedisServer } from '../helpers/redis-server';
import { sleep, timed } from '../helpers/wait';

/**
 * Semaphores and latches keep the locks' time budgets: against a Redis that stops answering
 * (SIGSTOP), a wait settles by waitTime + slack and a single call by commandTimeout, with
 * RedisUnavailableError; what an acquire took while nobody waited for it any more goes back, and a
 * release that went unanswered lands once Redis answers, counted once.
 */
const COMMAND_TIMEOUT = 1_000;
const SLACK_MS = 600;

describe('semaphore and latch time budgets', () => {
  let server: RedisServer;
  let client: LockClient;

  beforeEach(async () => {
    server = await startRedis();
    client = new LockClient(server.connect({ maxRetriesPerRequest: null }), {
      commandTimeout: COMMAND_TIMEOUT,
    });
  });
  afterEach(async () => {
    server.thaw();
    await client.close();
    await server.stop();
  });

  test('a frozen server: waits end at waitTime, calls at commandTimeout, and nothing is lost or doubled', async () => {
    const semaphore = client.getSemaphore('budget:sem');
    const latch = client.getCountDownLatch('budget:latch');
    await semaphore.trySetPermits(1);
    await latch.trySetCount(1);
    server.freeze();
    const [acquire, release, available, awaited, countDown] = await Promise.all([
      timed(semaphore.tryAcquire(1, 2_000)),
      timed(semaphore.release(1)),
      timed(semaphore.availablePermits()),
      timed(latch.await({ waitTime: 2_000 })),
      timed(latch.countDown()),
    ]);
    for (const outcome of [acquire, awaited]) {
      expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
      expect(outcome.ms).toBeLessThan(2_000 + SLACK_MS + 400);
    }
    for (const outcome of [release, available, countDown]) {
      expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
      expect(outcome.ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
    }
    server.thaw();
    await sleep(1_500);
    // The acquire's late grant went back; the release and the countDown landed, once each.
    expect(await semaphore.availablePermits()).toBe(2);
    expect(await latch.getCount()).toBe(0);
  }, 30_000);
});
