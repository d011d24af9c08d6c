import { ClientClosedError } from '../../src';
import { clientAddress, lockWaitersKey } from '../../src/protocol/keys';
import { deployment } from '../helpers/deployment';
import { holderIds } from '../helpers/holders';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';
import { expectWokenByRelease } from '../helpers/wake';

/** The clients waiting for getLock `name` (see lua/include/lock-waiters.lua). */
const waitersKey = (name: string): string => lockWaitersKey(name);
/** A client's address for a channel of its own, as the deployment subscribes it (see clientAddress). */
const addressOf = (channel: string): string => clientAddress(channel, '', 'classic');
/** A channel somebody listens on without acting: a stopped process. */
const deafChannel = 'rlock_client__channel:{deaf-client}';

describe('waiting by pub/sub', () => {
  const redis = useRedis();

  test('a waiter sleeps without polling Redis', async () => {
    const holder = redis.client();
    const waiter = redis.client();
    await holder.getLock('quiet').lock();
    // The waiter's client has announced itself (see ClientRegistry), and has the scripts of a wait
    // loaded, before the count starts.
    await holder.getLock('warm-up').lock();
    expect(await waiter.getLock('warm-up').tryLock(50)).toBe(false);
    await redis.resetStats();
    const waiting = waiter.getLock('quiet').tryLock(1_500);
    await sleep(1_200);
    // One attempt before listening and one after: nothing more while asleep.
    expect(await redis.scriptCalls()).toBe(2);
    expect(await waiting).toBe(false);
  });

  test('one release wakes one waiter per process, not all of them', async () => {
    const holder = redis.client();
    const waiters = redis.client();
    // The release script is loaded before the count (a NOSCRIPT answer would count one call more).
    await holder.getLock('herd-warm-up').withLock(() => undefined);
    const held = holder.getLock('herd');
    await held.lock();
    const results = Array.from({ length: 6 }, () => waiters.getLock('herd').tryLock(3_000));
    const outcomes = Promise.allSettled(results);
    // Every waiter asleep: no script call for a while (a busy machine can take longer than 300 ms).
    let calls = -1;
    await eventually('every waiter asleep', async () => {
      const now = await redis.scriptCalls();
      const quiet = now === calls;
      calls = now;
      if (!quiet) await sleep(150);
      return quiet;
    });
    await redis.resetStats();
    await held.unlock();
    await sleep(300);
    // The release, then the single woken waiter's successful attempt.
    expect(await redis.scriptCalls()).toBe(2);
    await waiters.close();
    const settled = await outcomes;
    expect(settled.filter((outcome) => outcome.status === 'fulfilled' && outcome.value)).toHaveLength(1);
  });

  test('getLock: a release wakes one waiting client, not every client that waits', async () => {
    const holder = redis.client();
    const held = holder.getLock('one-client');
    await held.lock();
    // Each client's attempts on the lock, counted as they are written.
    let attempts = 0;
    const clients = Array.from({ length: 4 }, () => {
      const connection = redis.connect();
      const send = connection.sendCommand.bind(connection);
      connection.sendCommand = (command, ...rest) => {
        const script = command.name === 'evalsha' || command.name === 'eval';
        if (script && command.args.map(String).includes('one-client')) attempts += 1;
        return send(command, ...rest);
      };
      return redis.client({}, connection);
    });
    const waits = clients.map((client) => client.getLock('one-client').tryLock(5_000));
    const outcomes = Promise.allSettled(waits);
    await eventually(
      'every client waits',
      async () => (await redis.admin().zcard(waitersKey('one-client'))) === 4,
    );
    await sleep(100);
    attempts = 0;
    await held.unlock();
    await sleep(300);
    // Only the client the release woke tried, and it holds the lock.
    expect(attempts).toBe(1);
    expect(await holderIds(redis.admin(), 'one-client')).toHaveLength(1);
    // (Each close releases what that client holds, and wakes the next.)
    for (const client of clients) await client.close();
    await outcomes;
  });

  test('getLock: each release wakes the next waiting client, oldest first, until every one took it', async () => {
    const holder = redis.client().getLock('in-turn');
    await holder.lock();
    const order: number[] = [];
    const clients = Array.from({ length: 5 }, () => redis.client());
    const waits: Array<Promise<void>> = [];
    for (const [i, client] of clients.entries()) {
      const lock = client.getLock('in-turn');
      waits.push(
        lock.lock().then(async () => {
          order.push(i);
          await lock.unlock();
        }),
      );
      await eventually(
        `client ${i} waits`,
        async () => (await redis.admin().zcard(waitersKey('in-turn'))) === i + 1,
      );
    }
    const releasedAt = performance.now();
    await holder.unlock();
    await Promise.all(waits);
    expect(performance.now() - releasedAt).toBeLessThan(1_000);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(await redis.admin().exists(waitersKey('in-turn'))).toBe(0);
  });

  test('getLock: a waiting client that is gone, or that no longer waits, does not hold the others up', async () => {
    const admin = redis.admin();
    const name = 'wake-past';
    const holder = redis.client().getLock(name);
    await holder.lock();
    // A client whose process is gone: nobody listens on its channel. And a client whose wait ended
    // (it gave up) while its entry stayed: it passes the wake-up on.
    await admin.zadd(waitersKey(name), 1, addressOf('rlock_client__channel:{gone-client}'));
    const quitter = redis.client();
    expect(await quitter.getLock(name).tryLock(100)).toBe(false);
    expect(await admin.zcard(waitersKey(name))).toBe(2);
    const waiter = redis.client();
    const taken = waiter.getLock(name).tryLock(5_000);
    await eventually('the waiter waits', async () => (await admin.zcard(waitersKey(name))) === 3);
    const releasedAt = performance.now();
    await holder.unlock();
    expect(await taken).toBe(true);
    expect(performance.now() - releasedAt).toBeLessThan(500);
  });

  test('getLock: a woken client that does not act (its process stopped) is passed over within the hand-off timeout', async () => {
    const admin = redis.admin();
    const name = 'wake-deaf';
    const holder = redis.client({ fairLockHandoffTimeout: 600 }).getLock(name);
    await holder.lock();
    // Something listens on this channel, so the wake-up is delivered, but nobody acts on it.
    const deaf = redis.connect();
    await deaf.subscribe(deafChannel);
    // On a cluster PUBLISH counts one node's receivers only: the address says so.
    await admin.zadd(
      waitersKey(name),
      1,
      clientAddress(deafChannel, '', deployment === 'cluster' ? 'broadcast' : 'classic'),
    );
    const waiter = redis.client();
    const taken = waiter.getLock(name).tryLock(5_000);
    await eventually('the waiter waits', async () => (await admin.zcard(waitersKey(name))) === 2);
    const releasedAt = performance.now();
    await holder.unlock();
    expect(await taken).toBe(true);
    const after = performance.now() - releasedAt;
    expect(after).toBeGreaterThanOrEqual(550);
    expect(after).toBeLessThan(1_500);
    deaf.disconnect();
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
