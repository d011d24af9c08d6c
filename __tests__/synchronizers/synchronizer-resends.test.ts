import { RedisReplyError, RedisUnavailableError, type LockClient } from '../../src';
import { LUA_SCRIPTS } from '../../src/protocol/lua.generated';
import { useRedis } from '../helpers/setup';
import { eventually, sleep, timed } from '../helpers/wait';

/**
 * ioredis re-sends a command whose reply a reconnect lost. Redisson's scripts would add a permit or
 * count down twice; rlock's request latches make the copy answer as the first run did.
 */
describe('semaphore and latch commands re-sent after a reconnect', () => {
  const redis = useRedis();

  test('the proxy really makes a count change twice (negative control: a latch-less INCRBY)', async () => {
    const { proxy } = await redis.clientThroughProxy();
    const connection = redis.server().connect({ port: proxy.port });
    await connection.ping();
    await proxy.loseReplyOf(() => connection.incrby('naive-permits', 1));
    expect(await redis.admin().get('naive-permits')).toBe('2');
  });

  test('a release and an addPermits whose replies were lost add their permits once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const semaphore = client.getSemaphore('resent:release');
    await semaphore.trySetPermits(0);
    await proxy.loseReplyOf(() => semaphore.release(2));
    expect(await semaphore.availablePermits()).toBe(2);
    await proxy.loseReplyOf(() => semaphore.addPermits(3));
    expect(await semaphore.availablePermits()).toBe(5);
  });

  test('an acquire and a drain whose replies were lost take their permits once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const semaphore = client.getSemaphore('resent:acquire');
    await semaphore.trySetPermits(5);
    await proxy.loseReplyOf(() => semaphore.acquire(2));
    expect(await semaphore.availablePermits()).toBe(3);
    expect(await proxy.loseReplyOf(() => semaphore.drainPermits())).toBe(3);
    await semaphore.release(1);
    expect(await semaphore.availablePermits()).toBe(1);
  });

  test('a countDown whose reply was lost counts down once', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const latch = client.getCountDownLatch('resent:latch');
    await latch.trySetCount(3);
    await proxy.loseReplyOf(() => latch.countDown());
    expect(await latch.getCount()).toBe(2);
    expect(await proxy.loseReplyOf(() => latch.trySetCount(9))).toBe(false);
  });

  test('expirable permits: a lost acquire takes one permit, a lost release neither fails nor adds two', async () => {
    const { client, proxy } = await redis.clientThroughProxy();
    const semaphore = client.getPermitExpirableSemaphore('resent:pes');
    expect(await proxy.loseReplyOf(() => semaphore.trySetPermits(2))).toBe(true);
    const id = await proxy.loseReplyOf(() => semaphore.acquire());
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await redis.admin().zcard('{resent:pes}:timeout')).toBe(1);
    await proxy.loseReplyOf(() => semaphore.release(id));
    expect(await semaphore.availablePermits()).toBe(2);
    await proxy.loseReplyOf(() => semaphore.addPermits(1));
    expect(await semaphore.availablePermits()).toBe(3);
  });
});

/**
 * A request latch makes the copies of one request count once only while it lives. A copy that runs
 * later (rlock re-sends while replies come late; ioredis re-sends after a reconnect; a paused server
 * runs what waited in its socket) must find it, or take no effect.
 */
describe('copies of a request that run late', () => {
  const redis = useRedis();
  /** Replies 2.5 s late through a client whose calls give up after 1 s and whose latches live 1.5 s. */
  const SLOW = { commandTimeout: 1_000, watchdogTimeout: 1_500 };
  const REPLY_DELAY = 2_500;

  /**
   * Every script of rlock, loaded on the server, so that each copy below runs as soon as it
   * arrives: a script's first call would cost a round trip more (NOSCRIPT, then its text).
   */
  const loadEveryScript = async (): Promise<void> => {
    for (const lua of Object.values(LUA_SCRIPTS)) await redis.admin().script('LOAD', lua);
  };

  test('a release answered 2.5 s late adds its permit once, however long its re-sends take', async () => {
    const { client, proxy } = await redis.clientThroughProxy(SLOW);
    const semaphore = client.getSemaphore('late:release');
    await loadEveryScript();
    await semaphore.trySetPermits(1);
    proxy.delayReplies(REPLY_DELAY);
    const { error, ms } = await timed(semaphore.release(1));
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect(ms).toBeLessThan(1_500);
    await sleep(8_000);
    expect(await redis.admin().get('late:release')).toBe('2');
  }, 20_000);

  test('every change re-sent in the background counts once, whatever kind it is', async () => {
    const { client, proxy } = await redis.clientThroughProxy(SLOW);
    const holder = redis.client({ watchdogTimeout: 1_000 });
    const semaphore = client.getSemaphore('late:sem');
    const drained = client.getSemaphore('late:drained');
    const expirable = client.getPermitExpirableSemaphore('late:pes');
    const latch = client.getCountDownLatch('late:latch');
    await loadEveryScript();
    await semaphore.trySetPermits(4);
    await drained.trySetPermits(3);
    await expirable.trySetPermits(3);
    await latch.trySetCount(4);
    // Locks of explicit owner ids, each held three times through another client: an unlock()
    // through this one releases any one hold of the owner (no mark names it).
    const locks = {
      lock: (c: LockClient) => c.getLock('late:lock'),
      fair: (c: LockClient) => c.getFairLock('late:fair'),
      read: (c: LockClient) => c.getReadWriteLock('late:read').readLock(),
      write: (c: LockClient) => c.getReadWriteLock('late:write').writeLock(),
    };
    for (const [kind, lockOf] of Object.entries(locks)) {
      await holder.runInTask(
        async () => {
          for (let i = 0; i < 3; i += 1) await lockOf(holder).lock();
        },
        { ownerId: `late:${kind}-owner` },
      );
    }

    proxy.delayReplies(REPLY_DELAY);
    const outcomes = await Promise.all([
      timed(semaphore.addPermits(2)),
      timed(semaphore.tryAcquire(1)),
      timed(drained.drainPermits()),
      timed(expirable.addPermits(1)),
      timed(expirable.tryAcquire()),
      timed(latch.countDown()),
      ...Object.entries(locks).map(([kind, lockOf]) =>
        timed(client.runInTask(() => lockOf(client).unlock(), { ownerId: `late:${kind}-owner` })),
      ),
    ]);
    for (const { error, ms } of outcomes) {
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect(ms).toBeLessThan(1_500);
    }
    await sleep(7_000);
    // Once each: two permits added; the acquire, whose fate was unknown, given back once.
    // Read through another connection (replies still come late through this one), all at once.
    const admin = redis.admin();
    const state: Record<string, string | null> = {
      semaphore: await admin.get('late:sem'),
      drained: await admin.get('late:drained'),
      expirable: await admin.get('late:pes'),
      latch: await admin.get('late:latch'),
    };
    for (const kind of Object.keys(locks)) {
      const field = `late:${kind}-owner${kind === 'write' ? ':write' : ''}`;
      state[kind] = await admin.hget(`late:${kind}`, field);
    }
    expect(state).toEqual({
      semaphore: String(4 + 2),
      drained: '0',
      expirable: String(3 + 1),
      latch: '3',
      // Each held three times, released once.
      lock: '2',
      fair: '2',
      read: '2',
      write: '2',
    });
  }, 30_000);

  test('copies ioredis re-sends after a reconnect that comes after the window take no effect', async () => {
    const { client, proxy } = await redis.clientThroughProxy(SLOW);
    const semaphore = client.getSemaphore('late:resent');
    const errors: unknown[] = [];
    client.on('redisError', ({ error }) => errors.push(error));
    await loadEveryScript();
    await semaphore.trySetPermits(1);
    // Redis runs every copy as it comes, and no reply comes back: rlock sends copies until the
    // window closes, and each stays in ioredis' queue, unanswered.
    proxy.dropReplies();
    await expect(semaphore.release(1)).rejects.toThrow(RedisUnavailableError);
    // Reported: nobody waits for the background copies, which never learnt their fate.
    await eventually('the release is reported unanswered', () =>
      errors.some((error) => /window closed/.test(String(error))),
    );
    // Past the latch's life: now the connection drops and ioredis re-sends them all.
    await sleep(4_500);
    proxy.resetConnections();
    await eventually('the connection is back', async () => (await semaphore.availablePermits()) >= 0);
    await sleep(500);
    expect(await redis.admin().get('late:resent')).toBe('2');
  }, 30_000);

  test('a request that finds its window closed on arrival fails clearly, and the clock is read again', async () => {
    const connection = redis.connect();
    const time = connection.time.bind(connection);
    // A reading of the server's clock ten minutes behind (a clock that jumped after it was read).
    (connection as unknown as { time: () => Promise<string[]> }).time = async () => {
      const [seconds, micros] = await time();
      return [String(Number(seconds) - 600), String(micros)];
    };
    const client = redis.client(SLOW, connection);
    const semaphore = client.getSemaphore('late:clock');
    const failed = await timed(semaphore.trySetPermits(3));
    expect(failed.error).toBeInstanceOf(RedisReplyError);
    expect((failed.error as RedisReplyError).replyCode).toBe('LATE');
    expect(await redis.admin().exists('late:clock')).toBe(0);
    (connection as unknown as { time: typeof time }).time = time;
    expect(await semaphore.trySetPermits(3)).toBe(true);
    expect(await semaphore.availablePermits()).toBe(3);
  });
});
