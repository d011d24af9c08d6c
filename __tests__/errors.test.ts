import { Cluster } from 'ioredis';
import { LockClient, LockNotHeldError, RedisReplyError, RedisUnavailableError } from '../src';
import { closeNow, startRedis } from './helpers/redis-server';
import { holdCounts } from './helpers/holders';
import { useRedis } from './helpers/setup';

describe('bad input', () => {
  const redis = useRedis();

  const badTimes: Array<[unknown, RegExp]> = [
    [Number.NaN, /RangeError/],
    [-2, /RangeError/],
    [1.5, /RangeError/],
    [2 ** 31, /RangeError/],
    [Infinity, /RangeError/],
    ['100', /TypeError/],
    [null, /TypeError/],
  ];

  test.each(badTimes)('leaseTime %p is refused with an error naming leaseTime', async (value, kind) => {
    const lock = redis.client().getLock('bad-lease');
    const error = await lock.lock(value as number).catch((e: unknown) => e);
    expect(String(error)).toMatch(kind);
    expect((error as Error).message).toMatch(/^leaseTime must be/);
    await expect(lock.tryLock({ leaseTime: value as number })).rejects.toThrow(/leaseTime/);
    await expect(lock.tryLock(0, value as number)).rejects.toThrow(/leaseTime/);
    expect(await redis.admin().dbsize()).toBe(0);
  });

  test.each(badTimes)('waitTime %p is refused with an error naming waitTime', async (value, kind) => {
    const lock = redis.client().getLock('bad-wait');
    const error = await lock.tryLock(value as number).catch((e: unknown) => e);
    expect(String(error)).toMatch(kind);
    expect((error as Error).message).toMatch(/^waitTime must be/);
    await expect(lock.withLock(() => 1, { waitTime: value as number })).rejects.toThrow(/waitTime/);
    expect(await redis.admin().dbsize()).toBe(0);
  });

  test('a leaseTime of 0 is refused (PEXPIRE 0 would delete the lock at once)', async () => {
    await expect(redis.client().getLock('zero').lock(0)).rejects.toThrow(RangeError);
  });

  test('-1 means the watchdog for leaseTime and forever for waitTime', async () => {
    const lock = redis.client().getLock('minus-one');
    expect(await lock.tryLock(-1, -1)).toBe(true);
    expect(await lock.remainTimeToLive()).toBeGreaterThan(29_000);
  });

  test.each([[undefined], [''], [42], [null], [{}]])('lock name %p is refused', (name) => {
    expect(() => redis.client().getLock(name as string)).toThrow(/^name must be a non-empty string/);
  });

  test('options, signals and callbacks of the wrong type are refused', async () => {
    const lock = redis.client().getLock('shapes');
    await expect(lock.tryLock([] as unknown as number)).rejects.toThrow(/options must be an options object/);
    await expect(lock.lock({ signal: 'stop' as unknown as AbortSignal })).rejects.toThrow(
      /signal must be an AbortSignal/,
    );
    await expect(lock.withLock('fn' as unknown as () => void)).rejects.toThrow(/fn must be a function/);
    expect(await redis.admin().dbsize()).toBe(0);
  });

  test('tryLock(options, leaseTime), lock(lease, more) and tryAcquire(options, waitTime) are refused: the time belongs inside the options', async () => {
    const client = redis.client();
    const group = client.getMultiLock(client.getLock('two-forms-a'), client.getLock('two-forms-b'));
    const refusals: Array<[() => Promise<unknown>, RegExp]> = [client.getLock('two-forms'), group].flatMap(
      (lock): Array<[() => Promise<unknown>, RegExp]> => [
        // lock() has no wait time: a second argument is refused, never ignored.
        [
          () => lockWith(lock, { leaseTime: 3_000 }, 5_000),
          /^lock\(\) takes one argument.*got a second argument 5000/,
        ],
        [() => lockWith(lock, 3_000, 5_000), /^lock\(\) takes one argument/],
        [() => lock.tryLock({ waitTime: 100 } as never, 5_000), /^leaseTime .*inside the options object/],
        [() => lock.tryLock(undefined as never, 5_000), /^waitTime must be given beside a leaseTime/],
        [() => lock.tryLock(undefined as never, 'a' as never), /^waitTime must be given beside a leaseTime/],
        [() => lock.tryLock(100, 'a' as never), /^leaseTime must be/],
      ],
    );
    for (const [call, message] of refusals) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect(error).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringMatching(message) });
    }
    const semaphore = client.getSemaphore('two-forms-sem');
    const error = await semaphore.tryAcquire({ permits: 1 } as never, 5_000).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'ERR_INVALID_ARG_TYPE',
      message: expect.stringMatching(/^waitTime belongs inside the options object/),
    });
    let running: Promise<unknown> | undefined;
    expect(() => {
      running = semaphore.withPermits(-1, () => 1);
    }).not.toThrow();
    await expect(running).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    expect(await redis.admin().dbsize()).toBe(0);
  });

  test('an options argument that is not a plain object is refused (a Date, a Map, an instance)', async () => {
    const client = redis.client();
    const lock = client.getLock('not-plain');
    class Options {
      waitTime = 100;
    }
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['lock(new Date())', () => lock.lock(new Date() as never)],
      ['tryLock(new Map())', () => lock.tryLock(new Map() as never)],
      ['tryLock(new Options())', () => lock.tryLock(new Options())],
      ['withLock(fn, new Date())', () => lock.withLock(() => 1, new Date() as never)],
      ['hold(new Date())', () => lock.hold(new Date() as never)],
      ['MultiLock lock(new Date())', () => client.getMultiLock(lock).lock(new Date() as never)],
      [
        'semaphore tryAcquire(new Date())',
        () => client.getSemaphore('not-plain-sem').tryAcquire(new Date() as never),
      ],
      [
        'latch await(new Date())',
        () => client.getCountDownLatch('not-plain-latch').await(new Date() as never),
      ],
      ['runInTask(fn, new Date())', () => client.runInTask(() => 1, new Date() as never)],
    ];
    for (const [label, call] of calls) {
      const error = await call().catch((e: unknown) => e);
      expect({ label, error }).toEqual({ label, error: expect.any(TypeError) });
      expect((error as Error).message).toMatch(
        /^options must be a plain options object .*; got an object \((Date|Map|Options)\)/,
      );
    }
    expect(await redis.admin().dbsize()).toBe(0);
  });

  test('runInTask with a bad argument rejects, as withLock does, and never throws', async () => {
    const client = redis.client();
    let running: Promise<unknown> | undefined;
    expect(() => {
      running = client.runInTask(5 as never);
    }).not.toThrow();
    await expect(running).rejects.toMatchObject({
      code: 'ERR_INVALID_ARG_TYPE',
      message: 'fn must be a function',
    });
    expect(() => {
      running = client.runInTask(() => 1, { owner: 'x' } as never);
    }).not.toThrow();
    await expect(running).rejects.toThrow(/has no option "owner"/);
    await client.close();
    expect(() => {
      running = client.runInTask(() => 1);
    }).not.toThrow();
    await expect(running).rejects.toMatchObject({ code: 'ERR_CLIENT_CLOSED' });
  });

  test('LockClient options are checked', () => {
    const connection = redis.server().connect();
    expect(() => new LockClient(connection, { watchdogTimeout: 50 })).toThrow(/watchdogTimeout/);
    expect(() => new LockClient(connection, { watchdogTimeout: Number.NaN })).toThrow(/watchdogTimeout/);
    expect(() => new LockClient(connection, { watchdogBatchSize: 0 })).toThrow(/watchdogBatchSize/);
    expect(() => new LockClient(connection, { fairLockHandoffTimeout: 50 })).toThrow(
      /^fairLockHandoffTimeout must be/,
    );
    expect(() => new LockClient(connection, { fairLockHandoffTimeout: 1.5 })).toThrow(
      /^fairLockHandoffTimeout must be/,
    );
    // Never longer than a place lives, unless asked: 1 s, or fairLockWaitTimeout when shorter.
    expect(redis.client().fairLockHandoffTimeout).toBe(1_000);
    expect(redis.client({ fairLockWaitTimeout: 600 }).fairLockHandoffTimeout).toBe(600);
    expect(redis.client({ fairLockHandoffTimeout: 2_500 }).fairLockHandoffTimeout).toBe(2_500);
    expect(() => new LockClient(connection, { clientId: '' })).toThrow(/clientId/);
    // The value is echoed, as for the other options.
    expect(() => new LockClient(connection, { clientId: 'orders{eu}' })).toThrow(
      /clientId must be .* without braces .*; got "orders\{eu\}"/,
    );
    expect(() => new LockClient(connection, { commandTimeout: 0 })).toThrow(/^commandTimeout must be/);
    expect(() => new LockClient({} as never)).toThrow(/ioredis-compatible/);
    expect(() => new LockClient(connection, { pubSub: 'fast' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_OUT_OF_RANGE', message: expect.stringMatching(/pubSub/) }),
    );
    expect(() => new LockClient(connection, { waitForReplicas: 1 as never })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_ARG_TYPE',
        message: expect.stringMatching(/waitForReplicas/),
      }),
    );
    expect(() => new LockClient(connection, { waitForReplicas: { replicas: 0 } })).toThrow(
      /waitForReplicas\.replicas/,
    );
    expect(() => new LockClient(connection, { waitForReplicas: { replicas: 1, timeout: 0 } })).toThrow(
      /waitForReplicas\.timeout/,
    );
    // A Cluster needs no subscriber connection: rlock connects to the nodes it needs.
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    expect(() => new LockClient(cluster, { subscriber: connection })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringMatching(/Cluster/) }),
    );
  });
});

describe('Redis faults reach the caller as errors', () => {
  const redis = useRedis();

  test('a value of another type at the lock key rejects every operation that reads it', async () => {
    await redis.admin().set('clobbered', 'not a hash');
    const lock = redis.client().getLock('clobbered');
    await expect(lock.lock()).rejects.toThrow(/WRONGTYPE/);
    await expect(lock.tryLock()).rejects.toThrow(/WRONGTYPE/);
    await expect(lock.tryLock(200)).rejects.toThrow(/WRONGTYPE/);
    // Nothing was taken: unlock() knows that without asking Redis.
    await expect(lock.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    await expect(lock.getHoldCount()).rejects.toThrow(/WRONGTYPE/);
    expect(await redis.admin().get('clobbered')).toBe('not a hash');
  });

  test('a Redis error names the lock, the operation and what Redis said, with the original as cause', async () => {
    await redis.admin().set('clobbered-2', 'not a hash');
    const lock = redis.client().getFairLock('clobbered-2');
    const error = await lock.tryLock(100).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisReplyError);
    expect(error).toMatchObject({
      code: 'ERR_REDIS_REPLY',
      lockName: 'clobbered-2',
      operation: 'acquire',
      replyCode: 'WRONGTYPE',
      message: expect.stringMatching(/^lock "clobbered-2": acquire failed: Redis answered WRONGTYPE/),
    });
    expect((error as Error).cause).toMatchObject({ name: 'ReplyError' });
    await expect(lock.isLocked()).resolves.toBe(true);
    await expect(lock.getHoldCount()).rejects.toMatchObject({
      operation: 'getHoldCount',
      replyCode: 'WRONGTYPE',
    });
  });

  test('out of memory under noeviction rejects with OOM and writes nothing', async () => {
    const admin = redis.admin();
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
    try {
      await expect(redis.client().getLock('oom').lock()).rejects.toThrow(/OOM/);
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    expect(await admin.dbsize()).toBe(0);
  });

  test('SCRIPT FLUSH on the server is survived', async () => {
    const lock = redis.client().getLock('flushed');
    await lock.lock();
    await redis.admin().script('FLUSH');
    await lock.lock();
    await redis.admin().script('FLUSH');
    await lock.unlock();
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
  });

  test('after SCRIPT FLUSH, the calls in flight send the script text once between them', async () => {
    const client = redis.client();
    const admin = redis.admin();
    await client.getLock('warm').withLock(() => undefined);
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    const locks = Array.from({ length: 300 }, (_, i) => client.getLock(`burst-${i}`));
    await Promise.all(locks.map((lock) => lock.lock()));
    await Promise.all(locks.map((lock) => lock.unlock()));
    const stats = await admin.info('commandstats');
    const calls = (command: string): number =>
      Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    // The acquire script's text once and the release script's once; the other calls went again
    // as EVALSHA behind it (each NOSCRIPT answer ran nothing).
    expect(calls('eval')).toBe(2);
    expect(calls('evalsha')).toBe(4 * 300 - 2);
    expect(await admin.dbsize()).toBe(1); // the client's entry
  });

  test('a Buffer keyPrefix is kept once when a forgotten script is sent again as text', async () => {
    const prefix = Buffer.from('äpp:');
    const connection = redis.connect({ keyPrefix: prefix as unknown as string });
    const lock = redis.client({}, connection).getLock('ya');
    const admin = redis.admin();
    await admin.script('FLUSH');
    await lock.lock();
    expect(await admin.exists('äpp:ya')).toBe(1);
    expect(await lock.isLocked()).toBe(true);
    await admin.script('FLUSH');
    await lock.unlock();
    expect(await admin.exists('äpp:ya')).toBe(0);
    for (const key of await admin.keys('*')) expect(key).toMatch(/^äpp:rlock_client:/);
  });

  test('a read-only replica rejects with READONLY', async () => {
    const primary = redis.server();
    const replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)]);
    try {
      const client = new LockClient(replica.connect());
      await expect(client.getLock('replica').lock()).rejects.toThrow(/READONLY/);
      await expect(client.getLock('replica').tryLock()).rejects.toMatchObject({
        code: 'ERR_REDIS_REPLY',
        replyCode: 'READONLY',
      });
      await client.close();
    } finally {
      await replica.stop();
    }
  });

  test('a lost connection rejects instead of hanging', async () => {
    const doomed = await startRedis();
    const connection = doomed.connect({ maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    const client = new LockClient(connection);
    const held = client.getLock('gone');
    await held.lock();
    await doomed.stop();
    await expect(held.unlock()).rejects.toBeInstanceOf(RedisUnavailableError);
    await expect(client.getLock('gone').tryLock(100)).rejects.toBeInstanceOf(RedisUnavailableError);
    await client.close();
    closeNow(connection);
  });
});

describe('commands re-sent after a reconnect', () => {
  const redis = useRedis();

  test('the proxy really makes a script run twice (negative control: a latch-less acquire counts 2)', async () => {
    const { proxy } = await redis.clientThroughProxy();
    const connection = redis.server().connect({ port: proxy.port });
    await connection.ping();
    const naiveAcquire = `redis.call('hincrby', KEYS[1], ARGV[1], 1) redis.call('pexpire', KEYS[1], 30000) return 1`;
    await proxy.loseReplyOf(() => connection.eval(naiveAcquire, 1, 'naive', 'me:1'));
    expect(await redis.admin().hget('naive', 'me:1')).toBe('2');
  });

  test('an acquire whose reply was lost is counted once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const lock = client.getLock('resent-acquire');
    await proxy.loseReplyOf(() => lock.lock());
    expect(Object.values(await holdCounts(redis.admin(), 'resent-acquire'))).toEqual(['1']);
    await lock.unlock();
    expect(await redis.admin().exists('resent-acquire')).toBe(0);
  });

  test('a re-entry whose reply was lost is counted once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const lock = client.getLock('resent-reentry');
    await lock.lock();
    await proxy.loseReplyOf(() => lock.lock());
    expect(await lock.getHoldCount()).toBe(2);
  });

  test('a release whose reply was lost neither fails nor releases a second hold', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const lock = client.getLock('resent-release');
    await lock.lock();
    await lock.lock();
    await proxy.loseReplyOf(() => lock.unlock());
    expect(await lock.getHoldCount()).toBe(1);
    await proxy.loseReplyOf(() => lock.unlock());
    expect(await lock.isLocked()).toBe(false);
  });

  test('a fenced acquire whose reply was lost is counted once and keeps the token it was given', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const lock = client.getFencedLock('resent-fenced');
    const token = await proxy.loseReplyOf(() => lock.lockAndGetToken());
    expect(await lock.getHoldCount()).toBe(1);
    expect(await lock.getToken()).toBe(token);
    await proxy.loseReplyOf(() => lock.unlock());
    expect(await lock.isLocked()).toBe(false);
  });

  test('read-write lock: read and write acquires and releases whose replies were lost count once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const rw = client.getReadWriteLock('resent-rw');
    await proxy.loseReplyOf(() => rw.writeLock().lock());
    await proxy.loseReplyOf(() => rw.writeLock().lock());
    expect(await rw.writeLock().getHoldCount()).toBe(2);
    await proxy.loseReplyOf(() => rw.readLock().lock());
    await proxy.loseReplyOf(() => rw.readLock().lock());
    expect(await rw.readLock().getHoldCount()).toBe(2);
    expect(await redis.admin().keys('{resent-rw}:*')).toHaveLength(2);
    await proxy.loseReplyOf(() => rw.writeLock().unlock());
    expect(await rw.writeLock().getHoldCount()).toBe(1);
    await proxy.loseReplyOf(() => rw.writeLock().unlock());
    expect(await rw.writeLock().isLocked()).toBe(false);
    expect(await redis.admin().hget('resent-rw', 'mode')).toBe('read');
    await proxy.loseReplyOf(() => rw.readLock().unlock());
    expect(await rw.readLock().getHoldCount()).toBe(1);
    const writer = redis.client().getReadWriteLock('resent-rw').writeLock();
    const waiting = writer.tryLock(5_000);
    await proxy.loseReplyOf(() => rw.readLock().unlock());
    expect(await waiting).toBe(true);
    expect(await redis.admin().keys('{resent-rw}:*')).toEqual([]);
  });

  test('fair lock: acquire and release whose replies were lost count once, and the next waiter gets it', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const lock = client.getFairLock('resent-fair');
    await proxy.loseReplyOf(() => lock.lock());
    await proxy.loseReplyOf(() => lock.lock());
    expect(await lock.getHoldCount()).toBe(2);
    const next = redis.client().getFairLock('resent-fair');
    const waiting = next.tryLock(5_000);
    await proxy.loseReplyOf(() => lock.unlock());
    expect(await lock.getHoldCount()).toBe(1);
    await proxy.loseReplyOf(() => lock.unlock());
    expect(await waiting).toBe(true);
    await next.unlock();
    expect(await redis.admin().exists('resent-fair')).toBe(0);
  });
});

/** lock() called with a second argument, which its types do not allow. */
function lockWith(lock: { lock(leaseTime?: number): Promise<void> }, ...args: unknown[]): Promise<void> {
  return (lock.lock as (...given: unknown[]) => Promise<void>).apply(lock, args);
}
