import type Redis from 'ioredis';
import { LockClient, RedisUnavailableError, type LockClientOptions, type RedisErrorEvent } from '../../src';
import { callBudget, waitBudget } from '../helpers/budgets';
import { FaultProxy } from '../helpers/proxy';
import { closeNow, startRedis, type RedisServer } from '../helpers/redis-server';
import { eventually, sleep, timed } from '../helpers/wait';

/**
 * Semaphores and latches keep the locks' time budgets: against a Redis that stops answering
 * (SIGSTOP), a wait settles by waitTime + slack and a single call by commandTimeout, with
 * RedisUnavailableError; what an acquire took while nobody waited for it any more goes back, and a
 * release that went unanswered lands once Redis answers, counted once.
 */
const COMMAND_TIMEOUT = 1_000;

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
      expect(outcome.ms).toBeLessThan(waitBudget(2_000));
    }
    for (const outcome of [release, available, countDown]) {
      expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
      expect(outcome.ms).toBeLessThan(callBudget(COMMAND_TIMEOUT));
    }
    server.thaw();
    await sleep(1_500);
    // The acquire's late grant went back; the release and the countDown landed, once each.
    expect(await semaphore.availablePermits()).toBe(2);
    expect(await latch.getCount()).toBe(0);
  }, 30_000);
});

/**
 * A change whose caller was told it failed (RedisUnavailableError: sent again in the background)
 * lands once when Redis answers again within twice its request window: whether or not the client
 * had read Redis' clock before, through a pause longer than the window, a restart that keeps the
 * data, and commands that reach Redis after their window. Past that bound it is reported.
 */
describe('changes sent again in the background land once', () => {
  /** Windows of 1.5 s (watchdogTimeout), each latch 1.5 s more: the bound is an outage of 3 s. */
  const SHORT: LockClientOptions = { commandTimeout: 500, watchdogTimeout: 1_500 };
  /** What each change below leaves once it landed once. */
  const ONCE = { semaphore: '2', added: '3', expirable: '1', latch: '2', lock: '2' };
  /** What the changes find before they land. */
  const BEFORE = { semaphore: '1', added: '1', expirable: '0', latch: '3', lock: '3' };
  let server: RedisServer;
  let admin: Redis;
  let clients: LockClient[];
  let proxy: FaultProxy | undefined;

  beforeEach(async () => {
    server = await startRedis();
    admin = server.connect();
    clients = [];
  });
  afterEach(async () => {
    server.thaw();
    await Promise.all(clients.map((client) => client.close()));
    await proxy?.stop();
    proxy = undefined;
    closeNow(admin);
    await server.stop();
  });

  /** A client on its own connection, connected: `warm` when it has read Redis' clock too. */
  const connected = async (warm: boolean, port = server.port): Promise<LockClient> => {
    const connection = server.connect({ port, maxRetriesPerRequest: null });
    await connection.ping();
    const client = new LockClient(connection, SHORT);
    clients.push(client);
    if (warm) await client.getSemaphore('bg:warm-up').trySetPermits(1);
    return client;
  };

  /**
   * A semaphore to release and one to add to, an expirable permit to release, a latch to count
   * down, and a lock an explicit owner holds three times through another client (its release
   * through this one is one of any hold of the owner: a request with a window too). Returns the
   * expirable permit's id.
   */
  const prepare = async (): Promise<string> => {
    const setup = await connected(true);
    await setup.getSemaphore('bg:sem').trySetPermits(1);
    await setup.getSemaphore('bg:add').trySetPermits(1);
    const expirable = setup.getPermitExpirableSemaphore('bg:pes');
    await expirable.trySetPermits(1);
    const id = await expirable.acquire();
    await setup.getCountDownLatch('bg:latch').trySetCount(3);
    await setup.runInTask(
      async () => {
        for (let i = 0; i < 3; i += 1) await setup.getLock('bg:lock').lock(60_000);
      },
      { ownerId: 'bg:owner' },
    );
    return id;
  };

  const change = (client: LockClient, id: string): Array<Promise<unknown>> => [
    client.getSemaphore('bg:sem').release(1),
    client.getSemaphore('bg:add').addPermits(2),
    client.getPermitExpirableSemaphore('bg:pes').release(id),
    client.getCountDownLatch('bg:latch').countDown(),
    client.runInTask(() => client.getLock('bg:lock').unlock(), { ownerId: 'bg:owner' }),
  ];

  const state = async (): Promise<Record<string, string | null>> => ({
    semaphore: await admin.get('bg:sem'),
    added: await admin.get('bg:add'),
    expirable: await admin.get('bg:pes'),
    latch: await admin.get('bg:latch'),
    lock: await admin.hget('bg:lock', 'bg:owner'),
  });

  /** Every change was told it failed within its commandTimeout. */
  const expectToldFailed = (outcomes: Array<{ ms: number; error?: unknown }>): void => {
    for (const outcome of outcomes) {
      expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
      expect(outcome.ms).toBeLessThan(callBudget(500));
    }
  };

  /** Each change lands, and once: nothing more comes of it a window later. */
  const expectLandedOnce = async (): Promise<void> => {
    let seen: Record<string, string | null> = {};
    await eventually(
      'every change landed',
      async () => JSON.stringify((seen = await state())) === JSON.stringify(ONCE),
      8_000,
    ).catch(() => expect(seen).toEqual(ONCE));
    await sleep(3_000);
    expect(await state()).toEqual(ONCE);
  };

  test.each([
    ['1 s, from a client that has not read Redis clock yet', false, 1_000],
    ['1 s, from a client that has read it', true, 1_000],
    // Every copy sent meanwhile reaches Redis after its window, and takes no effect.
    ['2.5 s, longer than the window', true, 2_500],
  ])(
    'a pause of %s: each change lands once',
    async (_label, warm, pauseMs) => {
      const id = await prepare();
      const client = await connected(warm);
      server.freeze();
      const frozenAt = performance.now();
      expectToldFailed(await Promise.all(change(client, id).map((call) => timed(call))));
      await sleep(pauseMs - (performance.now() - frozenAt));
      server.thaw();
      await expectLandedOnce();
    },
    30_000,
  );

  test('a restart that keeps the data, from a client that has not read Redis clock yet: each change lands once', async () => {
    const id = await prepare();
    const client = await connected(false);
    await admin.save();
    await server.down();
    expectToldFailed(await Promise.all(change(client, id).map((call) => timed(call))));
    await sleep(500);
    await server.up({ keepData: true });
    await expectLandedOnce();
  }, 30_000);

  test('commands that reach Redis 2 s late, after their window: each change lands once', async () => {
    const id = await prepare();
    proxy = await new FaultProxy(server.port).start();
    const client = await connected(true, proxy.port);
    proxy.delayRequests(2_000);
    expectToldFailed(await Promise.all(change(client, id).map((call) => timed(call))));
    // Nothing has reached Redis yet (read around the proxy).
    expect(await state()).toEqual(BEFORE);
    await expectLandedOnce();
  }, 30_000);

  test('an outage longer than twice the window is given up on, and reported', async () => {
    await prepare();
    const client = await connected(true);
    const reports: RedisErrorEvent[] = [];
    client.on('redisError', (event) => reports.push(event));
    server.freeze();
    expectToldFailed([await timed(client.getSemaphore('bg:sem').release(1))]);
    await eventually(
      'the release is given up on',
      () => reports.some((event) => event.operation === 'release' && event.retryInMs === undefined),
      5_000,
    );
    await sleep(500);
    server.thaw();
    const givenUp = reports.find((event) => event.retryInMs === undefined);
    expect(givenUp?.error.message).toMatch(/took effect once or not at all/);
    await sleep(500);
    // Its copies reached Redis after their window: nothing was counted.
    expect(await admin.get('bg:sem')).toBe('1');
  }, 30_000);
});
