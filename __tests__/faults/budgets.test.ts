import type { RedisOptions } from 'ioredis';
import {
  LockClient,
  LockNotHeldError,
  RedisUnavailableError,
  type LockClientOptions,
  type RedisErrorEvent,
  type RLock,
} from '../../src';
import { callBudget, waitBudget } from '../helpers/budgets';
import { reportFault } from '../helpers/report';
import { holdCounts } from '../helpers/holders';
import { startRedis, type RedisServer } from '../helpers/redis-server';
import { useRedis } from '../helpers/setup';
import { eventually, sleep, timed } from '../helpers/wait';

/**
 * A Redis that is killed, paused, slow or restarted, under the ioredis options services set: every
 * call settles within its budget (a wait within waitTime + slack, a single call within
 * commandTimeout), an outage is an error and never "someone else holds it", nothing taken after its
 * caller gave up stays behind, and the client heals once Redis is back.
 */

const COMMAND_TIMEOUT = 1_000;

const OPTION_SETS: Array<[string, RedisOptions]> = [
  ['ioredis defaults', {}],
  ['maxRetriesPerRequest: null', { maxRetriesPerRequest: null }],
  ['maxRetriesPerRequest: 1', { maxRetriesPerRequest: 1 }],
  ['enableOfflineQueue: false', { enableOfflineQueue: false }],
  // Commands of one tick go out together, answered together, one pipeline at a time.
  ['enableAutoPipelining: true', { enableAutoPipelining: true }],
  // ioredis then fails a command itself, yet the command may run later: what it took is given back.
  ['ioredis commandTimeout: 500', { commandTimeout: 500 }],
];

function expectUnavailable(outcome: { error?: unknown; value?: unknown }, lockName: string): void {
  expect(outcome.value).toBeUndefined();
  expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
  expect(outcome.error).toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE', lockName });
}

describe.each(OPTION_SETS)('time budgets with %s', (label, ioredisOptions) => {
  let server: RedisServer;
  const clients: LockClient[] = [];

  beforeEach(async () => {
    server = await startRedis();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await server.stop();
  });

  const client = async (options: LockClientOptions = {}): Promise<LockClient> => {
    const made = new LockClient(server.connect(ioredisOptions), {
      commandTimeout: COMMAND_TIMEOUT,
      ...options,
    });
    clients.push(made);
    // Connected and scripts loaded, as a service would be before the outage.
    await made.getLock('warm-up').withLock(() => undefined);
    return made;
  };

  test('server killed: waits end with RedisUnavailableError at waitTime, single calls at commandTimeout', async () => {
    const locks = await client();
    const held = locks.getLock('b-held');
    await held.lock();
    await server.down();
    const [tryLock, withLock, fairTryLock, tryOnce, unlock, isLocked, forceUnlock, holdCount] =
      await Promise.all([
        timed(locks.getLock('b-kill').tryLock(2_000)),
        timed(locks.getLock('b-kill').withLock(() => 'ran', { waitTime: 2_000 })),
        timed(locks.getFairLock('b-kill-fair').tryLock(2_000)),
        timed(locks.getLock('b-kill').tryLock()),
        timed(held.unlock()),
        timed(locks.getLock('b-kill').isLocked()),
        timed(locks.getLock('b-kill').forceUnlock()),
        timed(locks.getLock('b-kill').getHoldCount()),
      ]);
    reportFault(`server killed (${label})`, {
      tryLockMs: tryLock.ms,
      withLockMs: withLock.ms,
      fairTryLockMs: fairTryLock.ms,
      tryOnceMs: tryOnce.ms,
      unlockMs: unlock.ms,
      isLockedMs: isLocked.ms,
    });
    for (const outcome of [tryLock, withLock, tryOnce, isLocked, forceUnlock, holdCount]) {
      expectUnavailable(outcome, 'b-kill');
    }
    expectUnavailable(fairTryLock, 'b-kill-fair');
    expectUnavailable(unlock, 'b-held');
    for (const wait of [tryLock, withLock, fairTryLock]) expect(wait.ms).toBeLessThan(waitBudget(2_000));
    for (const call of [tryOnce, unlock, isLocked, forceUnlock, holdCount]) {
      expect(call.ms).toBeLessThan(callBudget(COMMAND_TIMEOUT));
    }
  }, 20_000);

  test('server paused: waits end within their budget, and what lands after it is given back', async () => {
    const locks = await client();
    const admin = server.connect();
    // A lock whose holder is told its release failed, while the release itself runs on resume.
    const released = locks.getLock('b-pause-release');
    await released.lock();
    server.freeze();
    const releasing = timed(released.unlock());
    let outcomes: Array<Awaited<ReturnType<typeof timed<unknown>>>>;
    try {
      outcomes = await Promise.all([
        timed(locks.getLock('b-pause').tryLock(2_000)),
        timed(locks.getLock('b-pause-with').withLock(() => 'ran', { waitTime: 2_000 })),
        timed(locks.getFairLock('b-pause-fair').tryLock(2_000)),
        timed(locks.getLock('b-pause-once').tryLock()),
      ]);
      // The release goes on in the background: unlock() again finds nothing to give back, and says why.
      expectUnavailable(await releasing, 'b-pause-release');
      const again = await released.unlock().catch((error: unknown) => error);
      expect(again).toBeInstanceOf(LockNotHeldError);
      expect(String((again as Error).message)).toMatch(/last unlock\(\) was not answered by Redis/);
    } finally {
      server.thaw();
    }
    reportFault(`server paused (${label})`, {
      tryLockMs: outcomes[0]!.ms,
      withLockMs: outcomes[1]!.ms,
      fairTryLockMs: outcomes[2]!.ms,
      tryOnceMs: outcomes[3]!.ms,
    });
    outcomes.forEach((outcome, i) => {
      expectUnavailable(outcome, ['b-pause', 'b-pause-with', 'b-pause-fair', 'b-pause-once'][i] as string);
      expect(outcome.ms).toBeLessThan(i === 3 ? callBudget(COMMAND_TIMEOUT) : waitBudget(2_000));
    });
    // The attempts ran when the server resumed: each grant nobody waited for is given back.
    await eventually(
      'no phantom hold',
      async () =>
        (await admin.exists('b-pause', 'b-pause-with', 'b-pause-fair', 'b-pause-once', 'b-pause-release')) ===
        0,
      5_000,
    );
    // The same handle takes it again, and its next unlock() releases that hold, not the old one.
    await released.lock();
    await released.unlock();
    expect(await admin.exists('b-pause-release')).toBe(0);
  }, 20_000);

  test('lock() rides out a restart, acquires once Redis is back, and reports the outage meanwhile', async () => {
    const locks = await client();
    const events: RedisErrorEvent[] = [];
    locks.on('redisError', (event) => events.push(event));
    await server.down();
    const plain = locks.getLock('b-ride');
    const fair = locks.getFairLock('b-ride-fair');
    const acquired = Promise.all([plain.lock(), fair.lock()]);
    await sleep(1_500);
    await server.up();
    const upAt = performance.now();
    await acquired;
    const afterReturnMs = performance.now() - upAt;
    reportFault(`lock() over a restart (${label})`, { afterReturnMs, events: events.length });
    expect(afterReturnMs).toBeLessThan(4_000);
    expect(events.some((event) => event.operation === 'acquire' && event.retryInMs !== undefined)).toBe(true);
    expect(await plain.isHeldByCurrentTask()).toBe(true);
    expect(await fair.isHeldByCurrentTask()).toBe(true);
    await plain.unlock();
    await fair.unlock();
  }, 20_000);

  test('a client whose first waits met an outage works once Redis is back (no failure is kept)', async () => {
    await server.down();
    const connection = server.connect(ioredisOptions);
    const fresh = new LockClient(connection, { commandTimeout: COMMAND_TIMEOUT });
    clients.push(fresh);
    expectUnavailable(await timed(fresh.getLock('b-heal').tryLock(500)), 'b-heal');
    expectUnavailable(await timed(fresh.getFairLock('b-heal-fair').tryLock(500)), 'b-heal-fair');
    await server.up();
    const other = await client();
    // Without an offline queue, ioredis fails every command until its next connection attempt
    // (its backoff may still run): so does rlock. Once connected, nothing of the outage is kept.
    await eventually('reconnected', () => connection.status === 'ready', 5_000);
    for (const [kind, lockOf] of [
      ['plain', (c: LockClient) => c.getLock('b-heal')],
      ['fair', (c: LockClient) => c.getFairLock('b-heal-fair')],
    ] as Array<[string, (c: LockClient) => RLock]>) {
      const held = lockOf(other);
      await held.lock();
      setTimeout(() => void held.unlock(), 300);
      const waiter = lockOf(fresh);
      const contended = await timed(waiter.tryLock(5_000));
      expect({ kind, value: contended.value, error: contended.error }).toEqual({
        kind,
        value: true,
        error: undefined,
      });
      await waiter.unlock();
    }
  }, 20_000);
});

describe('time budgets, other faults', () => {
  const redis = useRedis();

  test('enableOfflineQueue: false on a healthy server: contended waits and fair locks work from a fresh client', async () => {
    const holder = redis.client();
    const connection = redis.server().connect({ enableOfflineQueue: false });
    const fresh = redis.client({}, connection);
    await eventually('connected', () => connection.status === 'ready');
    // A fair lock() opens its subscriber first; with the offline queue off that is a new
    // connection that cannot take a command until it is ready.
    const fair = fresh.getFairLock('q-fair');
    await fair.lock();
    await fair.unlock();
    for (const lock of [holder.getLock('q-plain'), holder.getFairLock('q-fair')]) {
      await lock.lock();
      setTimeout(() => void lock.unlock(), 200);
    }
    expect(await fresh.getLock('q-plain').tryLock(3_000)).toBe(true);
    expect(await fair.tryLock(3_000)).toBe(true);
  });

  test('a slow server (replies 3 s late): calls keep their budget and late grants are given back', async () => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: COMMAND_TIMEOUT });
    await client.getLock('slow-warm').withLock(() => undefined);
    proxy.delayReplies(3_000);
    const [once, waited, fair] = await Promise.all([
      timed(client.getLock('slow-1').tryLock()),
      timed(client.getLock('slow-2').tryLock(1_500)),
      timed(client.getFairLock('slow-3').tryLock(1_500)),
    ]);
    reportFault('replies 3 s late', { tryOnceMs: once.ms, tryLockMs: waited.ms, fairTryLockMs: fair.ms });
    expectUnavailable(once, 'slow-1');
    expectUnavailable(waited, 'slow-2');
    expectUnavailable(fair, 'slow-3');
    expect(once.ms).toBeLessThan(callBudget(COMMAND_TIMEOUT));
    expect(Math.max(waited.ms, fair.ms)).toBeLessThan(waitBudget(1_500));
    await eventually(
      'late grants given back',
      async () => (await redis.admin().exists('slow-1', 'slow-2', 'slow-3')) === 0,
      8_000,
    );
    // Replies come in order: once the delayed ones are through, the connection answers at once.
    proxy.delayReplies(0);
    await sleep(3_200);
    expect(await client.getLock('slow-1').tryLock(1_000)).toBe(true);
  }, 20_000);

  test('read-write lock, replies 3 s late: read and write calls keep their budget; late grants are withdrawn', async () => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: COMMAND_TIMEOUT });
    await client
      .getReadWriteLock('slow-rw-warm')
      .writeLock()
      .withLock(() => undefined);
    await client
      .getReadWriteLock('slow-rw-warm')
      .readLock()
      .withLock(() => undefined);
    proxy.delayReplies(3_000);
    const [read, write, readWith] = await Promise.all([
      timed(client.getReadWriteLock('slow-rw-1').readLock().tryLock()),
      timed(client.getReadWriteLock('slow-rw-2').writeLock().tryLock(1_500)),
      timed(
        client
          .getReadWriteLock('slow-rw-3')
          .readLock()
          .withLock(() => 'ran', { waitTime: 1_500 }),
      ),
    ]);
    reportFault('read-write lock, replies 3 s late', {
      readMs: read.ms,
      writeMs: write.ms,
      readWithMs: readWith.ms,
    });
    expectUnavailable(read, 'slow-rw-1');
    expectUnavailable(write, 'slow-rw-2');
    expectUnavailable(readWith, 'slow-rw-3');
    expect(read.ms).toBeLessThan(callBudget(COMMAND_TIMEOUT));
    expect(Math.max(write.ms, readWith.ms)).toBeLessThan(waitBudget(1_500));
    const left = async (): Promise<number> =>
      (await redis.admin().exists('slow-rw-1', 'slow-rw-2', 'slow-rw-3')) +
      (await redis.admin().keys('{slow-rw-*}:*')).length;
    await eventually(
      'late grants and their timeout keys given back',
      async () => (await left()) === 0,
      8_000,
    );
    proxy.delayReplies(0);
    await sleep(3_200);
    expect(await client.getReadWriteLock('slow-rw-1').writeLock().tryLock(1_000)).toBe(true);
  }, 20_000);

  test('killed and restarted mid-wait: the waiter takes the lock (its data is gone) within its wait', async () => {
    const server = redis.server();
    const holder = redis.client({ commandTimeout: COMMAND_TIMEOUT });
    const waiter = redis.client({ commandTimeout: COMMAND_TIMEOUT });
    await holder.getLock('mid-wait').lock();
    const waiting = timed(waiter.getLock('mid-wait').tryLock(6_000));
    await sleep(300);
    await server.down();
    await sleep(700);
    await server.up();
    const outcome = await waiting;
    reportFault('restarted mid-wait', { waitMs: outcome.ms });
    expect(outcome.value).toBe(true);
  }, 20_000);

  test('a reply lost to a reset connection that ioredis does not re-send: nothing stays held', async () => {
    const { proxy } = await redis.clientThroughProxy();
    const connection = redis.server().connect({ port: proxy.port, autoResendUnfulfilledCommands: false });
    const client = redis.client({ commandTimeout: COMMAND_TIMEOUT }, connection);
    await client.getLock('cut-warm').withLock(() => undefined);
    const outcome = await timed(proxy.loseReplyOf(() => client.getLock('cut').tryLock()));
    expectUnavailable(outcome, 'cut');
    await eventually('given back', async () => (await redis.admin().exists('cut')) === 0, 5_000);
  }, 20_000);

  test('an attempt ioredis sends again after an outage longer than its withdrawal: what it takes is given back', async () => {
    // enableOfflineQueue: false fails the withdrawal at once while the connection is down, so it
    // gives up when its window (the lease) closes; ioredis still holds the attempt, written before
    // the cut, and sends it again once Redis is reachable: it takes the lock with nobody waiting.
    const { proxy } = await redis.clientThroughProxy();
    const connection = redis.server().connect({ port: proxy.port, enableOfflineQueue: false });
    const client = redis.client({ commandTimeout: 200 }, connection);
    const lock = client.getLock('resent-late');
    await lock.withLock(() => undefined);
    const leaseTime = 2_500;
    proxy.dropReplies(); // the attempt runs, its answer is lost
    const attempt = timed(lock.tryLock({ leaseTime }));
    await sleep(50);
    await proxy.outOfReachFor(leaseTime + 1_000);
    expectUnavailable(await attempt, 'resent-late');
    await eventually('reconnected', () => connection.status === 'ready', 10_000);
    const back = performance.now();
    await eventually('given back', async () => (await redis.admin().exists('resent-late')) === 0, 5_000);
    const heldForMs = performance.now() - back;
    reportFault('attempt sent again after its withdrawal gave up', {
      heldAfterReconnectMs: Math.round(heldForMs),
    });
    expect(heldForMs).toBeLessThan(leaseTime / 2);
    expect(await lock.tryLock()).toBe(true);
    await lock.unlock();
  }, 20_000);

  test('a server slower than commandTimeout: lock() takes the grant that comes late, and holds it', async () => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: COMMAND_TIMEOUT });
    await client.getLock('slow-warm').withLock(() => undefined);
    proxy.delayReplies(1_500);
    const lock = client.getLock('slow-lock');
    const outcome = await timed(lock.lock());
    proxy.delayReplies(0);
    expect(outcome.error).toBeUndefined();
    expect(outcome.ms).toBeLessThan(6_000);
    await sleep(1_600);
    expect(Object.values(await holdCounts(redis.admin(), 'slow-lock'))).toEqual(['1']);
    await lock.unlock();
    expect(await redis.admin().exists('slow-lock')).toBe(0);
  }, 20_000);

  test('renewals answered late still count: no lease is reported lost while Redis renews it', async () => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: 500, watchdogTimeout: 3_000 });
    const lost: string[] = [];
    client.on('lockLost', (event) => lost.push(event.code));
    const lock = client.getLock('late-renewals');
    await lock.lock();
    proxy.delayReplies(800);
    await sleep(5_000);
    proxy.delayReplies(0);
    expect(lost).toEqual([]);
    expect(await redis.admin().pttl('late-renewals')).toBeGreaterThan(0);
  }, 20_000);

  test('getToken() keeps the time budget too', async () => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: COMMAND_TIMEOUT });
    const fenced = client.getFencedLock('token-budget');
    await fenced.tryLockAndGetToken();
    proxy.delayReplies(3_000);
    const outcome = await timed(fenced.getToken());
    expectUnavailable(outcome, 'token-budget');
    expect(outcome.ms).toBeLessThan(callBudget(COMMAND_TIMEOUT));
  }, 20_000);

  test('two waits through one fair-lock handle share its place: each keeps its own time and signal', async () => {
    const holder = redis.client();
    const client = redis.client();
    const held = holder.getFairLock('shared-place');
    await held.lock();
    const handle = client.getFairLock('shared-place');
    const long = timed(handle.tryLock(6_000));
    await sleep(50);
    const [short, aborted] = await Promise.all([
      timed(handle.tryLock(300)),
      timed(handle.tryLock({ waitTime: 5_000, signal: AbortSignal.timeout(250) })),
    ]);
    expect(short.value).toBe(false);
    expect(short.ms).toBeLessThan(waitBudget(300));
    expect(aborted.error).toMatchObject({ name: 'TimeoutError' });
    expect(aborted.ms).toBeLessThan(callBudget(250));
    await held.unlock();
    expect((await long).value).toBe(true);
  }, 20_000);

  test('a pub/sub connection that cannot connect: waits go on by looking again, and it is reported', async () => {
    const gone = await startRedis();
    await gone.stop();
    const deadPort = gone.port;
    const errors: string[] = [];
    const subscriber = redis
      .server()
      .connect({ port: deadPort, lazyConnect: true, retryStrategy: () => 200 });
    const client = redis.client({ subscriber });
    client.on('redisError', (event) => errors.push(event.operation));
    const free = await timed(client.getFairLock('no-pubsub').tryLock(2_000));
    expect(free.value).toBe(true);
    expect(free.ms).toBeLessThan(1_000);
    const holder = redis.client();
    const held = holder.getLock('no-pubsub-2');
    await held.lock(600);
    const waited = await timed(client.getLock('no-pubsub-2').tryLock(3_000));
    expect(waited.value).toBe(true);
    expect(waited.ms).toBeLessThan(600 + 1_000);
    expect(errors).toContain('subscribe');
  }, 20_000);

  test('close() while Redis is paused resolves within its budget', async () => {
    const server = await startRedis();
    const client = new LockClient(server.connect(), { commandTimeout: COMMAND_TIMEOUT });
    try {
      const holder = new LockClient(server.connect());
      await holder.getLock('paused-close').lock();
      const waiting = client.getLock('paused-close').lock();
      waiting.catch(() => undefined);
      await sleep(100);
      server.freeze();
      const closing = await timed(client.close({ timeout: 0 }));
      expect(closing.ms).toBeLessThan(callBudget(COMMAND_TIMEOUT));
      server.thaw();
      await holder.close();
    } finally {
      server.thaw();
      await server.stop();
    }
  }, 20_000);

  test('a fair wait that gives up during an outage answers by waitTime + slack, and leaves in the background', async () => {
    const server = await startRedis();
    const holder = new LockClient(server.connect(), { commandTimeout: COMMAND_TIMEOUT });
    const waiter = new LockClient(server.connect(), { commandTimeout: COMMAND_TIMEOUT });
    const admin = server.connect();
    try {
      await holder.getFairLock('gives-up').lock();
      const outcomes = [];
      for (const waitTime of [300, 1_500]) {
        // Queued while Redis answers, then Redis stops: the wait's last attempt takes the slack,
        // and its leave must not add to it.
        const waiting = timed(waiter.getFairLock('gives-up').tryLock(waitTime));
        await sleep(100);
        server.freeze();
        const outcome = await waiting;
        server.thaw();
        outcomes.push(outcome.ms);
        expectUnavailable(outcome, 'gives-up');
        expect(outcome.ms).toBeLessThan(waitBudget(waitTime));
        await eventually(
          'the place is left',
          async () => (await admin.llen('rlock_fair_queue:{gives-up}')) === 0,
        );
      }
      reportFault('fair wait giving up on a paused server', {
        tryLock300Ms: outcomes[0]!,
        tryLock1500Ms: outcomes[1]!,
      });
    } finally {
      server.thaw();
      admin.disconnect();
      await Promise.all([holder.close(), waiter.close()]);
      await server.stop();
    }
  }, 20_000);

  test.each([
    [1_000, 900],
    [2_000, 1_900],
  ])(
    'ioredis commandTimeout just under waitTime (tryLock(%i), commandTimeout %i): every wait answers within waitTime + slack',
    async (waitTime, ioredisTimeout) => {
      const server = await startRedis();
      // rlock's own commandTimeout is the default 3 s: ioredis' is the one that ends calls.
      const client = new LockClient(server.connect({ commandTimeout: ioredisTimeout }));
      try {
        await client.getLock('io-lock').lock();
        await client.getFairLock('io-fair').lock();
        await client.getReadWriteLock('io-rw').readLock().lock();
        await client.getSemaphore('io-sem').trySetPermits(0);
        server.freeze();
        const outcomes = await Promise.all([
          timed(client.getLock('io-lock').tryLock(waitTime)),
          timed(client.getFairLock('io-fair').tryLock(waitTime)),
          timed(client.getReadWriteLock('io-rw').writeLock().tryLock(waitTime)),
          timed(client.getSemaphore('io-sem').tryAcquire({ waitTime })),
        ]);
        reportFault(`ioredis commandTimeout ${ioredisTimeout}, waits of ${waitTime} ms`, {
          lockMs: outcomes[0]!.ms,
          fairMs: outcomes[1]!.ms,
          writeMs: outcomes[2]!.ms,
          semaphoreMs: outcomes[3]!.ms,
        });
        outcomes.forEach((outcome, i) => {
          expectUnavailable(outcome, ['io-lock', 'io-fair', 'io-rw', 'io-sem'][i] as string);
          expect(outcome.ms).toBeLessThan(waitBudget(waitTime));
        });
      } finally {
        server.thaw();
        await client.close();
        await server.stop();
      }
    },
    20_000,
  );

  test('the default commandTimeout is 3 s', async () => {
    const server = await startRedis();
    const client = new LockClient(server.connect());
    try {
      await client.getLock('default').isLocked();
      await server.down();
      const outcome = await timed(client.getLock('default').isLocked());
      expectUnavailable(outcome, 'default');
      expect(outcome.ms).toBeGreaterThan(2_900);
      expect(outcome.ms).toBeLessThan(callBudget(3_000));
    } finally {
      await client.close();
      await server.stop();
    }
  }, 20_000);

  test('close() ends a lock() that rides out an outage at once', async () => {
    const server = await startRedis();
    const client = new LockClient(server.connect({ maxRetriesPerRequest: null }));
    try {
      await client.getLock('warm').withLock(() => undefined);
      await server.down();
      const waiting = timed(client.getLock('closing').lock());
      await sleep(1_200);
      const closedAt = performance.now();
      const closing = timed(client.close());
      const outcome = await waiting;
      expect(outcome.error).toMatchObject({ code: 'ERR_CLIENT_CLOSED' });
      expect(performance.now() - closedAt).toBeLessThan(200);
      // What close() still sends (its client entry's removal) is bounded by commandTimeout.
      expect((await closing).ms).toBeLessThan(callBudget(3_000));
    } finally {
      await client.close();
      await server.stop();
    }
  }, 20_000);
});

describe('connections set to fail fast', () => {
  /** ioredis gives up on a command to a dead server within a few hundred ms with these options. */
  const FAIL_FAST: Array<[string, RedisOptions]> = [
    ['maxRetriesPerRequest: 1', { maxRetriesPerRequest: 1 }],
    ['enableOfflineQueue: false', { enableOfflineQueue: false }],
  ];
  /** How soon rlock must give up too: well within the default commandTimeout (3 s) and the waits. */
  const GIVES_UP_WITHIN_MS = 1_500;

  describe.each(FAIL_FAST)('%s', (label, ioredisOptions) => {
    let server: RedisServer;
    let client: LockClient;

    beforeEach(async () => {
      server = await startRedis();
      // The default commandTimeout (3 s): it is the connection that gives up first.
      client = new LockClient(server.connect(ioredisOptions));
      await client.getLock('warm-up').withLock(() => undefined);
    });
    afterEach(async () => {
      await client.close();
      await server.stop();
    });

    test.each([
      ['at once', 0],
      ['a while after', 1_000],
    ])(
      'server killed, calls made %s: every call and every wait gives up as the connection does',
      async (_when, afterMs) => {
        const held = client.getLock('ff-held');
        await held.lock();
        const semaphore = client.getSemaphore('ff-sem');
        await semaphore.trySetPermits(1);
        await server.down();
        await sleep(afterMs);
        const outcomes = await Promise.all([
          timed(client.getLock('ff').tryLock()),
          timed(client.getLock('ff').tryLock(2_000)),
          timed(client.getLock('ff').withLock(() => 'ran', { waitTime: 2_000 })),
          timed(client.getFairLock('ff').tryLock(2_000)),
          timed(client.getReadWriteLock('ff').readLock().tryLock(2_000)),
          timed(held.unlock()),
          timed(client.getLock('ff').isLocked()),
          timed(semaphore.tryAcquire(1, 2_000)),
          timed(client.getCountDownLatch('ff').await({ waitTime: 2_000 })),
        ]);
        reportFault(`fail-fast connection, server killed, calls ${afterMs} ms after (${label})`, {
          slowestMs: Math.max(...outcomes.map((outcome) => outcome.ms)),
        });
        for (const outcome of outcomes) {
          expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
          expect(outcome.ms).toBeLessThan(GIVES_UP_WITHIN_MS);
        }
      },
      20_000,
    );

    test('lock() still rides out the outage, and takes the lock once Redis is back', async () => {
      const events: RedisErrorEvent[] = [];
      client.on('redisError', (event) => events.push(event));
      await server.down();
      const lock = client.getLock('ff-ride');
      const acquiring = lock.lock();
      await sleep(1_500);
      await server.up();
      await acquiring;
      expect(events.filter((event) => event.operation === 'acquire').length).toBeGreaterThan(0);
      expect(await lock.isHeldByCurrentTask()).toBe(true);
      await lock.unlock();
    }, 20_000);
  });
});
