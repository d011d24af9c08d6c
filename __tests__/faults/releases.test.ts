import type { LockClient, LockLostEvent, RedisErrorEvent, ReleasedEvent } from '../../src';
import { reportFault } from '../helpers/report';
import { useRedis } from '../helpers/setup';
import { eventually, sleep, timed } from '../helpers/wait';

// Jest's sandbox lacks Node's Symbol.asyncDispose: installed as a polyfill would (see __tests__/locks/lock-hold.test.ts).
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for('Symbol.asyncDispose');

/**
 * A body that did its work, whose release Redis did not answer in time: the body's result stands
 * (a caller that retries on errors must not run it twice); the release goes on in the background,
 * and the client says so, and says what came of it.
 */
const COMMAND_TIMEOUT = 500;
/** Longer than commandTimeout: the release's answer comes too late for its call. */
const SLOW_REPLY_MS = 1_500;

describe('a release that went unanswered after the body did its work', () => {
  const redis = useRedis();

  /** A client whose replies the test can hold back, and what it reports. */
  const slowClient = async (
    options: { watchdogTimeout?: number } = {},
  ): Promise<{
    client: LockClient;
    proxy: Awaited<ReturnType<typeof redis.clientThroughProxy>>['proxy'];
    errors: RedisErrorEvent[];
    released: ReleasedEvent[];
    lost: LockLostEvent[];
  }> => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: COMMAND_TIMEOUT, ...options });
    await client.getLock('warm').withLock(() => undefined);
    await client.getSemaphore('warm').trySetPermits(1);
    await client.getSemaphore('warm').withPermits(1, () => undefined);
    const errors: RedisErrorEvent[] = [];
    const released: ReleasedEvent[] = [];
    const lost: LockLostEvent[] = [];
    client.on('redisError', (event) => errors.push(event));
    client.on('released', (event) => released.push(event));
    client.on('lockLost', (event) => lost.push(event));
    return { client, proxy, errors, released, lost };
  };

  /** Each way a body ends with a release; `slow()` makes Redis' answers late from then on. */
  const BODIES: Array<[string, (client: LockClient, slow: () => void) => Promise<string>, string[]]> = [
    [
      'withLock',
      (client, slow) =>
        client.getLock('rel').withLock(() => {
          slow();
          return 'done';
        }),
      ['rel'],
    ],
    [
      'a MultiLock withLock',
      (client, slow) =>
        client.getMultiLock(client.getLock('rel-1'), client.getLock('rel-2')).withLock(() => {
          slow();
          return 'done';
        }),
      ['rel-1', 'rel-2'],
    ],
    [
      'the end of an await using block',
      async (client, slow) => {
        await using held = await client.getLock('rel').hold();
        void held;
        slow();
        return 'done';
      },
      ['rel'],
    ],
    [
      'withPermits',
      async (client, slow) => {
        await client.getSemaphore('rel').trySetPermits(1);
        return client.getSemaphore('rel').withPermits(1, () => {
          slow();
          return 'done';
        });
      },
      [],
    ],
  ];

  test.each(BODIES)(
    '%s: resolves with the body’s result, reports the release, and the release lands later',
    async (_kind, run, locks) => {
      const { client, proxy, errors } = await slowClient();
      let runs = 0;
      const outcome = await timed(
        run(client, () => {
          runs += 1;
          proxy.delayReplies(SLOW_REPLY_MS);
        }),
      );
      proxy.delayReplies(0);
      expect({ value: outcome.value, error: outcome.error, runs }).toEqual({
        value: 'done',
        error: undefined,
        runs: 1,
      });
      expect(errors.filter((event) => event.operation === 'release')).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            operation: 'release',
            retryInMs: 0,
            error: expect.anything() as unknown,
          }),
        ]) as unknown,
      );
      await eventually(
        'released in Redis',
        async () =>
          locks.length > 0
            ? (await redis.admin().exists(...locks)) === 0
            : (await redis.admin().get('rel')) === '1',
        5_000,
      );
    },
    20_000,
  );

  test('the release lands later: the released event comes then, nothing is lost', async () => {
    const { client, proxy, released, lost } = await slowClient();
    await client.getLock('rel-late').withLock(() => proxy.delayReplies(SLOW_REPLY_MS));
    proxy.delayReplies(0);
    await eventually('released', () => released.some((event) => event.name === 'rel-late'), 5_000);
    expect(released.filter((event) => event.name === 'rel-late')).toEqual([
      expect.objectContaining({ name: 'rel-late', freed: true }),
    ]);
    expect(lost).toEqual([]);
  }, 20_000);

  test('the release, come late, finds the hold gone: lockLost tells the holder', async () => {
    const { client, proxy, lost } = await slowClient();
    const result = await client.getLock('rel-gone').withLock(
      async () => {
        await redis.admin().del('rel-gone'); // someone deleted it while the body ran
        proxy.delayReplies(SLOW_REPLY_MS);
        return 'done';
      },
      { leaseTime: 10_000 },
    );
    expect(result).toBe('done');
    await sleep(SLOW_REPLY_MS);
    proxy.delayReplies(0);
    await eventually('lockLost', () => lost.length > 0, 5_000);
    reportFault('release come late found the hold gone', { lost: lost.map((event) => event.code).join(',') });
    expect(lost).toEqual([expect.objectContaining({ name: 'rel-gone', code: 'not-in-redis' })]);
  }, 20_000);

  test('a release never answered is given up on when its latch would have expired: redisError tells', async () => {
    const { client, proxy, errors } = await slowClient({ watchdogTimeout: 1_500 });
    const result = await client.getLock('rel-never').withLock(() => {
      proxy.dropReplies();
      return 'done';
    });
    expect(result).toBe('done');
    await eventually(
      'given up',
      () => errors.some((event) => event.operation === 'release' && event.retryInMs === undefined),
      5_000,
    );
    expect(errors.find((event) => event.operation === 'release')?.retryInMs).toBe(0);
  }, 20_000);

  test('unlock() itself still rejects when its release goes unanswered: it is the caller’s own call', async () => {
    const { client, proxy, errors } = await slowClient();
    const lock = client.getLock('rel-unlock');
    await lock.lock();
    proxy.delayReplies(SLOW_REPLY_MS);
    const outcome = await timed(lock.unlock());
    proxy.delayReplies(0);
    expect(outcome.error).toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE', operation: 'release' });
    expect(errors).toEqual([
      expect.objectContaining({ name: 'rel-unlock', operation: 'release', retryInMs: 0 }),
    ]);
    await eventually(
      'released in Redis',
      async () => (await redis.admin().exists('rel-unlock')) === 0,
      5_000,
    );
  }, 20_000);
});
