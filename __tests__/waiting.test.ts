import { ClientClosedError } from '../src';
import { useRedis } from './helpers/setup';
import { eventually, sleep } from './helpers/wait';
import { expectWokenByRelease } from './helpers/wake';

describe('waiting by pub/sub', () => {
  const redis = useRedis();

  test('a waiter sleeps without polling Redis', async () => {
    const holder = redis.client();
    const waiter = redis.client();
    await holder.getLock('quiet').lock();
    // The waiter's client has announced itself (see ClientRegistry) before the count starts.
    await waiter.getLock('warm-up').withLock(() => undefined);
    await redis.resetStats();
    const waiting = waiter.getLock('quiet').tryLock(1_500);
    await sleep(1_200);
    // One attempt before subscribing and one after: nothing more while asleep.
    expect(await redis.scriptCalls()).toBe(2);
    expect(await waiting).toBe(false);
  });

  test('one release wakes one waiter per process, not all of them', async () => {
    const holder = redis.client();
    const waiters = redis.client();
    const held = holder.getLock('herd');
    await held.lock();
    const results = Array.from({ length: 6 }, () => waiters.getLock('herd').tryLock(3_000));
    const outcomes = Promise.allSettled(results);
    await sleep(300);
    await redis.resetStats();
    await held.unlock();
    await sleep(300);
    // The release, then the single woken waiter's successful attempt.
    expect(await redis.scriptCalls()).toBe(2);
    await waiters.close();
    const settled = await outcomes;
    expect(settled.filter((outcome) => outcome.status === 'fulfilled' && outcome.value)).toHaveLength(1);
  });

  test.each(['getLock', 'getFairLock', 'getReadWriteLock'] as const)(
    '%s: waits of one owner asleep together re-enter as soon as one of them takes the lock',
    async (kind) => {
      const holder = redis.client();
      const waiters = redis.client();
      const name = `siblings-${kind}`;
      const open = (client: typeof holder) =>
        kind === 'getReadWriteLock' ? client.getReadWriteLock(name).writeLock() : client[kind](name);
      const held = open(holder);
      // A long lease: a wait that is not woken sleeps until it ends.
      await held.lock(20_000);
      // One handle outside a task: one owner, three waits not awaited one by one.
      const lock = open(waiters);
      const started = performance.now();
      const all = Promise.all([lock.lock(), lock.lock(), lock.lock()]);
      await sleep(200);
      await held.unlock();
      await all;
      expect(performance.now() - started).toBeLessThan(2_000);
      await eventually('three holds in Redis', async () => (await lock.getHoldCount()) === 3);
      for (let i = 0; i < 3; i += 1) await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
    },
  );

  test.each(['sharded', 'classic'] as const)(
    "pubSub '%s': releases wake getLock and getFairLock waiters",
    async (pubSub) => {
      await redis.resetStats();
      const holder = redis.client({ pubSub });
      const waiter = redis.client({ pubSub });
      for (const kind of ['getLock', 'getFairLock'] as const) {
        await expectWokenByRelease(holder, waiter, kind, `announced-${pubSub}-${kind}`);
      }
      const published = (await redis.commandCalls('spublish')) > 0;
      expect(published).toBe(pubSub === 'sharded');
    },
  );

  test('after the subscriber reconnects, waiters re-check at once (a message sent meanwhile is lost)', async () => {
    const holder = redis.client({ watchdogTimeout: 20_000 });
    const waiter = redis.client();
    const held = holder.getLock('reconnect');
    await held.lock();
    const waiting = waiter.getLock('reconnect').tryLock(15_000);
    await sleep(200);
    await redis.killPubSub();
    const releasedAt = performance.now();
    await held.unlock();
    expect(await waiting).toBe(true);
    // Without the re-check the waiter would sleep out the holder's 20 s ttl.
    expect(performance.now() - releasedAt).toBeLessThan(3_000);
  });

  test('channels come and go across many waits without losing a wake-up', async () => {
    const holder = redis.client({ watchdogTimeout: 20_000 });
    const waiter = redis.client();
    const held = holder.getLock('churn');
    for (let round = 0; round < 12; round += 1) {
      await held.lock();
      const started = performance.now();
      const waiting = waiter.getLock('churn').tryLock(10_000);
      await sleep(20);
      await held.unlock();
      expect(await waiting).toBe(true);
      expect(performance.now() - started).toBeLessThan(2_000);
      await waiter.getLock('churn').forceUnlock();
      // Land the next subscribe around the moment the previous channel lingers out.
      await sleep(150 + round * 10);
    }
  });

  test('an aborted signal rejects the wait at once and leaves nothing behind', async () => {
    const holder = redis.client();
    const waiter = redis.client();
    const held = holder.getLock('abort');
    await held.lock();
    const controller = new AbortController();
    const waiting = waiter.getLock('abort').lock({ signal: controller.signal });
    await sleep(100);
    const abortedAt = performance.now();
    controller.abort(new Error('no longer needed'));
    await expect(waiting).rejects.toThrow('no longer needed');
    expect(performance.now() - abortedAt).toBeLessThan(100);
    await held.unlock();
    await sleep(200);
    expect(await redis.admin().exists('abort')).toBe(0);
  });

  test('an abort while a grant is in flight gives the grant back', async () => {
    const client = redis.client();
    const controller = new AbortController();
    const taking = client.getLock('late-grant').lock({ signal: controller.signal });
    controller.abort(new Error('changed my mind'));
    await expect(taking).rejects.toThrow('changed my mind');
    await sleep(100);
    expect(await redis.admin().exists('late-grant')).toBe(0);
  });

  test('an already aborted signal rejects before touching Redis', async () => {
    const client = redis.client();
    await redis.resetStats();
    await expect(
      client.getLock('pre').tryLock({ waitTime: 1_000, signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(await redis.scriptCalls()).toBe(0);
  });

  test('close() rejects pending waits and every later call with ClientClosedError', async () => {
    const holder = redis.client();
    const waiter = redis.client();
    await holder.getLock('closing').lock();
    const waiting = waiter.getLock('closing').lock();
    waiting.catch(() => undefined);
    const lock = waiter.getLock('closing');
    await sleep(100);
    await waiter.close();
    await expect(waiting).rejects.toBeInstanceOf(ClientClosedError);
    await expect(lock.tryLock()).rejects.toMatchObject({ code: 'ERR_CLIENT_CLOSED' });
    expect(() => waiter.getLock('closing')).toThrow(ClientClosedError);
  });
});
