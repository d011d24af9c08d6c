import Redis from 'ioredis';
import { LockNotHeldError, RedisReplyError, type LockClient, type LockClientOptions } from '../../src';
import { useRedis } from '../helpers/setup';
import { sleep, timed } from '../helpers/wait';
import { startWorker } from '../helpers/workers';
import { WITHOUT_PUBSUB } from '../helpers/without-pubsub';

/**
 * The spin lock is for servers and proxies without pub/sub, so it is tested on one: every pub/sub
 * command renamed away (see WITHOUT_PUBSUB), as such deployments do.
 */
describe('spin lock on a server without pub/sub', () => {
  const redis = useRedis(WITHOUT_PUBSUB);
  /** Connections opened like another one: how rlock makes a subscriber connection. */
  let duplicate: jest.SpyInstance;
  /** Those rlock opened (a Cluster opens one of its own to read the slot map). */
  const subscriberConnections = (): unknown[] =>
    duplicate.mock.calls.filter(
      ([options]) =>
        !/^ioredis-cluster/.test(String((options as { connectionName?: string })?.connectionName)),
    );

  beforeEach(() => {
    duplicate = jest.spyOn(Redis.prototype, 'duplicate');
  });
  afterEach(() => duplicate.mockRestore());

  /** A client whose redisError and lockLost events are kept, to show that there were none. */
  const watchedClient = (options?: LockClientOptions): { client: LockClient; events: unknown[] } => {
    const client = redis.client(options);
    const events: unknown[] = [];
    client.on('redisError', (event) => events.push(event));
    client.on('lockLost', (event) => events.push(event));
    return { client, events };
  };

  test('the server really has no pub/sub command (negative control)', async () => {
    await expect(redis.admin().publish('channel', 'message')).rejects.toThrow(/unknown command/);
    await expect(redis.admin().call('SPUBLISH', 'channel', 'message')).rejects.toThrow(/unknown command/);
    // A release script that publishes, as getLock's does, fails there.
    await expect(redis.admin().eval("return redis.call('publish', KEYS[1], '0')", 1, 'x')).rejects.toThrow(
      /Unknown Redis command called from script/,
    );
  });

  test('locks, re-enters, excludes and unlocks, with no subscriber connection and no error event', async () => {
    const { client, events } = watchedClient();
    const spin = client.getSpinLock('spin-basic');
    await spin.lock();
    await spin.lock();
    expect(await spin.getHoldCount()).toBe(2);
    expect(await spin.isHeldByCurrentTask()).toBe(true);
    expect(await client.getSpinLock('spin-basic').tryLock()).toBe(false);
    expect(await client.getLock('spin-basic').tryLock()).toBe(false);
    await spin.unlock();
    await spin.unlock();
    await expect(spin.unlock()).rejects.toThrow(LockNotHeldError);
    expect(await redis.admin().exists('spin-basic')).toBe(0);
    await client.getSpinLock('spin-basic').withLock(async () => {
      expect(await client.getSpinLock('spin-basic').getHoldCount()).toBe(1);
    });
    expect(await redis.admin().exists('spin-basic')).toBe(0);
    expect(subscriberConnections()).toEqual([]);
    expect(events).toEqual([]);
  });

  test('tryLock with a wait takes the lock soon after a release, and gives up at its waitTime', async () => {
    const { client, events } = watchedClient();
    const holder = client.getSpinLock('spin-wait');
    await holder.lock();
    // Kept, and released at the end: a handle garbage-collected while it holds is reported orphaned.
    const waiter = client.getSpinLock('spin-wait');
    const waiting = timed(waiter.tryLock(10_000));
    await sleep(300);
    await holder.unlock();
    const { value, ms } = await waiting;
    expect(value).toBe(true);
    // Found at the waiter's next attempt: its pauses grow to 512 ms at most.
    expect(ms).toBeLessThan(300 + 512 + 500);
    const late = await timed(holder.tryLock(400));
    expect(late.value).toBe(false);
    expect(late.ms).toBeGreaterThanOrEqual(380);
    expect(late.ms).toBeLessThan(1_500);
    const controller = new AbortController();
    const aborted = holder.lock({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('enough')), 100);
    await expect(aborted).rejects.toThrow('enough');
    expect(await holder.getHoldCount()).toBe(0);
    await waiter.unlock();
    expect(subscriberConnections()).toEqual([]);
    expect(events).toEqual([]);
  });

  test('a holder whose lease runs out is taken over within the lease', async () => {
    const { client } = watchedClient();
    await client.getSpinLock('spin-expiry').lock(500);
    const { value, ms } = await timed(client.getSpinLock('spin-expiry').tryLock(5_000));
    expect(value).toBe(true);
    expect(ms).toBeLessThan(1_500);
  });

  test('forceUnlock deletes a held lock, and a waiter takes it', async () => {
    const { client, events } = watchedClient();
    await client.getSpinLock('spin-force').lock();
    // Kept, and released at the end: a handle garbage-collected while it holds is reported orphaned.
    const waiter = client.getSpinLock('spin-force');
    const waiting = timed(waiter.tryLock(10_000));
    await sleep(100);
    expect(await client.getSpinLock('spin-force').forceUnlock()).toBe(true);
    expect((await waiting).value).toBe(true);
    await waiter.unlock();
    expect(await client.getSpinLock('spin-free').forceUnlock()).toBe(false);
    expect(subscriberConnections()).toEqual([]);
    // The holder is told it lost the lock; nothing else happened.
    expect(events).toEqual([expect.objectContaining({ name: 'spin-force', code: 'force-unlocked' })]);
  });

  test('the watchdog keeps a lease-less hold past several watchdogTimeouts', async () => {
    const { client, events } = watchedClient({ watchdogTimeout: 600 });
    const spin = client.getSpinLock('spin-watchdog');
    await spin.withLock(async ({ signal }) => {
      await sleep(2_000);
      expect(signal.aborted).toBe(false);
      expect(await redis.admin().pttl('spin-watchdog')).toBeGreaterThan(0);
      expect(await redis.client().getSpinLock('spin-watchdog').tryLock()).toBe(false);
    });
    expect(await redis.admin().exists('spin-watchdog')).toBe(0);
    expect(subscriberConnections()).toEqual([]);
    expect(events).toEqual([]);
  });

  test('waits across processes: a killed holder is taken over, and workers exclude each other', async () => {
    const port = String(redis.port());
    const holder = startWorker([port, 'hold', 'spin-remote'], {
      LOCK_KIND: 'spin',
      WATCHDOG_TIMEOUT: '1000',
    });
    expect(await holder.firstMessage).toBe('locked');
    const { client, events } = watchedClient();
    expect(await client.getSpinLock('spin-remote').tryLock(300)).toBe(false);
    const killedAt = performance.now();
    holder.child.kill('SIGKILL');
    const taker = client.getSpinLock('spin-remote');
    expect(await taker.tryLock(5_000)).toBe(true);
    expect(performance.now() - killedAt).toBeLessThan(1_000 + 1_000);
    await taker.unlock();

    const workers = [0, 1].map(() =>
      startWorker([port, 'counter', 'spin-count', '15'], { LOCK_KIND: 'spin' }),
    );
    expect(await Promise.all(workers.map((worker) => worker.firstMessage))).toEqual(['done', 'done']);
    expect(await redis.admin().get('spin-count:counter')).toBe('30');
    expect(await redis.admin().get('spin-count:overlaps')).toBeNull();
    expect(events).toEqual([]);
  }, 60_000);

  test('backs off: attempts grow sparse, bounded by maxDelay', async () => {
    const { client } = watchedClient();
    await client.getSpinLock('spin-backoff').lock();
    await redis.resetStats();
    const before = await redis.scriptCalls();
    expect(await client.getSpinLock('spin-backoff', { initialDelay: 10, maxDelay: 100 }).tryLock(1_500)).toBe(
      false,
    );
    const attempts = (await redis.scriptCalls()) - before;
    // With no back-off at 10 ms it would be ~150; at the 100 ms cap (with jitter) about 15-30.
    expect(attempts).toBeGreaterThan(8);
    expect(attempts).toBeLessThan(60);
  });

  test('a kind that needs pub/sub fails with an error that says so, never hangs', async () => {
    const { client, events } = watchedClient();
    const holder = client.getLock('plain-here');
    await holder.lock();
    // A wait needs a subscription, which this server refuses: the wait fails at once.
    const waiting = await timed(client.getLock('plain-here').tryLock(10_000));
    expect(waiting.error).toBeInstanceOf(RedisReplyError);
    expect(String(waiting.error)).toMatch(/no pub\/sub.*getSpinLock/);
    expect(waiting.ms).toBeLessThan(2_000);
    // The error names the lock waited for, not a channel (the client's own fails first).
    expect(waiting.error).toMatchObject({ lockName: 'plain-here', operation: 'subscribe' });
    expect(String(waiting.error)).toMatch(/^RedisReplyError: lock "plain-here": subscribe failed/);
    // And every later wait too, without asking the server again, each naming its own.
    const semaphore = client.getSemaphore('permits-here');
    await expect(semaphore.tryAcquire({ waitTime: 10_000 })).rejects.toMatchObject({
      lockName: 'permits-here',
      message: expect.stringMatching(/getSpinLock/),
    });
    await expect(client.getFairLock('plain-here').tryLock(10_000)).rejects.toMatchObject({
      lockName: 'plain-here',
    });
    // The release's PUBLISH fails after the lock was deleted (scripts do not roll back): said so.
    await expect(holder.unlock()).rejects.toThrow(/writes were made, but nobody was told.*getSpinLock/);
    expect(await redis.admin().exists('plain-here')).toBe(0);
    // Nothing is tried again in the background: no stream of error events.
    await sleep(1_500);
    expect(events).toEqual([]);
  });

  test('bad options are refused', () => {
    const { client } = watchedClient();
    expect(() => client.getSpinLock('x', { initialDelay: -5 })).toThrow(RangeError);
    expect(() => client.getSpinLock('x', { initialDelay: 100, maxDelay: 10 })).toThrow(/maxDelay/);
    expect(() => client.getSpinLock('x', { multiplier: Number.NaN })).toThrow(/multiplier/);
    expect(() => client.getSpinLock('x', { backoff: 1 } as never)).toThrow(/backoff/);
    expect(() => client.getSpinLock('')).toThrow(/name/);
  });
});

describe('spin lock beside getLock, on a server with pub/sub', () => {
  const redis = useRedis();

  test('getLock and getSpinLock exclude each other both ways; a getLock release wakes getLock waiters', async () => {
    const client = redis.client();
    const plain = client.getLock('spin-mixed');
    await plain.lock();
    const spin = client.getSpinLock('spin-mixed');
    const waiting = timed(spin.tryLock(10_000));
    await sleep(300);
    await plain.unlock();
    const { value, ms } = await waiting;
    expect(value).toBe(true);
    expect(ms).toBeLessThan(2_000);
    await spin.unlock();
    // getLock's own release still publishes Redisson's message: its waiter wakes at once.
    await plain.lock(5_000);
    const plainWaiter = timed(client.getLock('spin-mixed').tryLock(10_000));
    await sleep(100);
    await plain.unlock();
    const woken = await plainWaiter;
    expect(woken.value).toBe(true);
    expect(woken.ms).toBeLessThan(1_000);
  });

  test('a spin release publishes nothing: a getLock waiter finds the lock free at its ttl re-check', async () => {
    const client = redis.client();
    const spin = client.getSpinLock('spin-silent');
    await spin.lock(1_500);
    await redis.resetStats();
    const plainWaiter = timed(client.getLock('spin-silent').tryLock(10_000));
    await sleep(200);
    await spin.unlock();
    const woken = await plainWaiter;
    expect(woken.value).toBe(true);
    // Asleep until the holder's ttl (about 1.3 s when it looked), not woken by the release.
    expect(woken.ms).toBeGreaterThan(900);
    expect(woken.ms).toBeLessThan(1_500 + 1_000);
    // Nor does a forced delete.
    expect(await spin.forceUnlock()).toBe(true);
    expect(await redis.commandCalls('publish')).toBe(0);
    expect(await redis.commandCalls('spublish')).toBe(0);
  });

  test('never subscribes: no channel is listened to on any server while it waits', async () => {
    const client = redis.client();
    await client.getLock('spin-nosub').lock();
    const waiting = client.getSpinLock('spin-nosub').tryLock(600);
    await sleep(300);
    // Classic and shard channels, on every master (a cluster spreads them over its nodes).
    const listened = await redis.everyMaster(async (node) => [
      ...((await node.pubsub('CHANNELS')) as string[]),
      ...((await node.call('PUBSUB', 'SHARDCHANNELS')) as string[]),
    ]);
    expect(listened.flat()).toEqual([]);
    expect(await waiting).toBe(false);
  });
});
