import type { RedisOptions } from 'ioredis';
import {
  LockClient,
  LockNotHeldError,
  RedisUnavailableError,
  type LockClientOptions,
  type RedisErrorEvent,
  type RLock,
} from '../../src';
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

/** What the time assertions allow beyond a budget on a busy 2-core machine. */
const SLACK_MS = 600;
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
    for (const wait of [tryLock, withLock, fairTryLock]) expect(wait.ms).toBeLessThan(2_000 + SLACK_MS);
    for (const call of [tryOnce, unlock, isLocked, forceUnlock, holdCount]) {
      expect(call.ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
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
      expect(outcome.ms).toBeLessThan((i === 3 ? COMMAND_TIMEOUT : 2_000) + SLACK_MS);
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
    const fresh = new LockClient(server.connect(ioredisOptions), { commandTimeout: COMMAND_TIMEOUT });
    clients.push(fresh);
    expectUnavailable(await timed(fresh.getLock('b-heal').tryLock(500)), 'b-heal');
    expectUnavailable(await timed(fresh.getFairLock('b-heal-fair').tryLock(500)), 'b-heal-fair');
    await server.up();
    const other = await client();
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
    expect(once.ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
    expect(Math.max(waited.ms, fair.ms)).toBeLessThan(1_500 + SLACK_MS);
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
    expect(read.ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
    expect(Math.max(write.ms, readWith.ms)).toBeLessThan(1_500 + SLACK_MS);
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
    expect(outcome.ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
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
    expect(short.ms).toBeLessThan(300 + SLACK_MS);
    expect(aborted.error).toMatchObject({ name: 'TimeoutError' });
    expect(aborted.ms).toBeLessThan(250 + SLACK_MS);
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
      expect(closing.ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
      server.thaw();
      await holder.close();
    } finally {
      server.thaw();
      await server.stop();
    }
  }, 20_000);

  test('the default commandTimeout is 3 s', async () => {
    const server = await startRedis();
    const client = new LockClient(server.connect());
    try {
      await client.getLock('default').isLocked();
      await server.down();
      const outcome = await timed(client.getLock('default').isLocked());
      expectUnavailable(outcome, 'default');
      expect(outcome.ms).toBeGreaterThan(2_900);
      expect(outcome.ms).toBeLessThan(3_000 + SLACK_MS);
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
      expect((await closing).ms).toBeLessThan(3_000 + 600);
    } finally {
      await client.close();
      await server.stop();
    }
  }, 20_000);
});
