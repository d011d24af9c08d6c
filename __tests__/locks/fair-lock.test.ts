import { createHash } from 'node:crypto';
import type Redis from 'ioredis';
import type { LockClient, LockLostEvent, RLock } from '../../src';
import { fifoViolations } from '../helpers/fifo';
import { holdCounts, holderIds } from '../helpers/holders';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';
import { startWorker } from '../helpers/workers';
import { UNCONFIRMED_POLL_MS } from '../../src/waiting/pubsub/subscriber';
import { clientAddress, fairHandoffChannel, fairLockKeys } from '../../src/protocol/keys';
import { LUA_SCRIPTS } from '../../src/protocol/lua.generated';
import { deployment } from '../helpers/deployment';

const queueKey = (name: string): string => `rlock_fair_queue:{${name}}`;
const deadlinesKey = (name: string): string => `rlock_fair_deadlines:{${name}}`;

/**
 * Writes a waiter's place into the lock's queue, as another client's wait would have: its place
 * expires `expiresInMs` after the server's clock (negative: a dead waiter).
 */
/**
 * Writes a place for `owner` into lock `name`'s queue, as its queueing attempt would, heard by the
 * client `heardBy` (none: its hand-offs reach nobody).
 */
async function placeInQueue(
  admin: Redis,
  name: string,
  owner: string,
  expiresInMs: number,
  heardBy?: LockClient,
): Promise<void> {
  const serverMs = Number((await admin.time())[0]) * 1000;
  await admin.rpush(queueKey(name), owner);
  await admin.zadd(deadlinesKey(name), serverMs + expiresInMs, owner);
  if (heardBy) {
    const way = deployment === 'cluster' ? 'sharded' : 'classic';
    await admin.hset(
      `rlock_fair_channels:{${name}}`,
      owner,
      clientAddress(handoffChannelOf(heardBy, name), '', way),
    );
  }
}

/** Where `client` hears the hand-offs of fair lock `name` (see fairHandoffChannel). */
function handoffChannelOf(client: LockClient, name: string): string {
  return fairHandoffChannel(fairLockKeys(name), client.id, deployment === 'cluster');
}

/** Starts `lock()` in a new task and resolves once the task is queued in Redis. */
async function queueUp(
  admin: Redis,
  client: LockClient,
  name: string,
  onAcquired: (lock: RLock) => Promise<void>,
): Promise<{ done: Promise<void> }> {
  const before = await admin.llen(queueKey(name));
  const done = client.runInTask(async () => {
    const lock = client.getFairLock(name);
    await lock.lock();
    await onAcquired(lock);
  });
  done.catch(() => undefined);
  await eventually(`a waiter queued on ${name}`, async () => (await admin.llen(queueKey(name))) > before);
  return { done };
}

/**
 * Two waits of one owner (one handle, outside a task) on a held lock: `aborted` ends when
 * `controller` aborts, `kept` waits on.
 */
function twoWaitsOfOneOwner(lock: RLock): {
  controller: AbortController;
  aborted: Promise<void>;
  kept: Promise<void>;
} {
  const controller = new AbortController();
  const aborted = lock.lock({ signal: controller.signal });
  aborted.catch(() => undefined);
  return { controller, aborted, kept: lock.lock() };
}

describe('fair lock', () => {
  const redis = useRedis();

  /** Lock `name` held by one client (`first`), and another client's handle on it, its lockLost events kept. */
  async function heldByAnother(name: string): Promise<{ first: RLock; lock: RLock; lost: LockLostEvent[] }> {
    const first = redis.client().getFairLock(name);
    await first.lock();
    const client = redis.client();
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    return { first, lock: client.getFairLock(name), lost };
  }

  test('has the reentrant lock API and ownership', async () => {
    const client = redis.client();
    const lock = client.getFairLock('fair-basic');
    await lock.lock();
    await lock.lock();
    expect(await lock.getHoldCount()).toBe(2);
    expect(await client.getFairLock('fair-basic').isHeldByCurrentTask()).toBe(false);
    expect(await lock.isLocked()).toBe(true);
    await lock.unlock();
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
    await expect(lock.unlock()).rejects.toMatchObject({ code: 'ERR_LOCK_NOT_HELD' });
  });

  test('waiters in one process acquire in the order they queued', async () => {
    const client = redis.client();
    const admin = redis.admin();
    const holder = client.getFairLock('fair-order');
    await holder.lock();
    const order: number[] = [];
    const waits = [];
    for (let i = 0; i < 8; i += 1) {
      const { done } = await queueUp(admin, client, 'fair-order', async (lock) => {
        order.push(i);
        await lock.unlock();
      });
      waits.push(done);
    }
    await holder.unlock();
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await admin.exists(queueKey('fair-order'), deadlinesKey('fair-order'))).toBe(0);
  });

  test('tryLock() never queues', async () => {
    const client = redis.client();
    await client.getFairLock('fair-try').lock();
    expect(await client.getFairLock('fair-try').tryLock()).toBe(false);
    expect(await client.getFairLock('fair-try').tryLock(0, 1_000)).toBe(false);
    expect(await redis.admin().llen(queueKey('fair-try'))).toBe(0);
  });

  test('a release hands the lock to the next waiter: no acquire attempt after the release', async () => {
    const client = redis.client();
    const admin = redis.admin();
    const holder = client.getFairLock('fair-handoff');
    await holder.lock();
    let heldAt = 0;
    await queueUp(admin, client, 'fair-handoff', async (lock) => {
      heldAt = performance.now();
      await lock.unlock();
    });
    await sleep(50);
    await redis.resetStats();
    const releasedAt = performance.now();
    await holder.unlock();
    await eventually('hand-off', () => heldAt > 0);
    expect(heldAt - releasedAt).toBeLessThan(500);
    await sleep(50);
    // The release and the waiter's own unlock: a body that gives the lock back before its
    // confirmation went out needs none.
    expect(await redis.scriptCalls()).toBe(2);
  });

  test('a body that runs on is confirmed once it began: it keeps the lock past the hand-off timeout', async () => {
    const client = redis.client({ fairLockHandoffTimeout: 300 });
    const admin = redis.admin();
    const holder = client.getFairLock('fair-confirmed');
    await holder.lock();
    const lost: string[] = [];
    client.on('lockLost', (event) => lost.push(event.code));
    let heldFor = -1;
    const { done } = await queueUp(admin, client, 'fair-confirmed', async (lock) => {
      const heldAt = performance.now();
      // Re-entered before the confirmation goes out: its own hold, the hand-off still to confirm.
      await lock.lock();
      await sleep(900);
      expect(await lock.getHoldCount()).toBe(2);
      await lock.unlock();
      await lock.unlock();
      heldFor = performance.now() - heldAt;
    });
    await sleep(50);
    await holder.unlock();
    await done;
    expect(heldFor).toBeGreaterThan(900);
    expect(lost).toEqual([]);
    expect(await admin.exists('fair-confirmed')).toBe(0);
  });

  test('a re-entry right after a hand-off adds its own hold: it never takes the hand-off over', async () => {
    const client = redis.client();
    const admin = redis.admin();
    const name = 'fair-reentry-after-handoff';
    const holder = redis.client().getFairLock(name);
    await holder.lock();
    let reentered = false;
    const { done } = await queueUp(admin, client, name, async (lock) => {
      // The wait that took the hand-off marked the lock contended: a wait would queue at once.
      await lock.lock();
      reentered = true;
      await lock.unlock();
      await lock.unlock();
    });
    // Every fair/acquire.lua attempt from now on, by its mode (ARGV[4]): a 'first' or 'queued' one
    // would take over a hand-off not confirmed yet (see fair/acquire.lua).
    const acquireScript = createHash('sha1')
      .update(LUA_SCRIPTS['fair/acquire.lua'] as string)
      .digest('hex');
    const monitor = await (await redis.serverOf(name)).connect().monitor();
    const modes: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'evalsha' && args[1] === acquireScript) modes.push(args[14] as string);
    });
    await admin.ping();
    await holder.unlock();
    await done;
    expect(reentered).toBe(true);
    expect(modes.filter((mode) => mode === 'first' || mode === 'queued')).toEqual([]);
    expect(await admin.exists(name)).toBe(0);
    monitor.disconnect();
  });

  test('a release that hands the lock to the head of the queue runs 12 Redis commands', async () => {
    // The contended path's cost in Redis, on every hand-off: the hold's release (HMGET, DEL), one
    // look for a queue, marker or Redisson waiters (EXISTS) and the head (LINDEX), the dead places
    // (TIME, ZRANGEBYSCORE), the grant (HSET, PEXPIRE), its marker (HSET, PEXPIRE), and the
    // message to the head's client (HGET, PUBLISH). A read added here slows every hand-off.
    const name = 'fair-release-commands';
    const holder = redis.client().getFairLock(name);
    const waiter = redis.client().getFairLock(name);
    await holder.withLock(() => undefined); // the release script loaded: EVALSHA finds it
    await holder.lock();
    const handedOver = waiter.lock();
    await eventually('queued', async () => (await redis.admin().llen(queueKey(name))) === 1);
    const releaseScript = createHash('sha1')
      .update(LUA_SCRIPTS['fair/release.lua'] as string)
      .digest('hex');
    const monitor = await (await redis.serverOf(name)).connect().monitor();
    const inRelease: string[] = [];
    let releasing = false;
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (!source.includes('lua'))
        releasing = args[0]?.toLowerCase() === 'evalsha' && args[1] === releaseScript;
      else if (releasing) inRelease.push((args[0] as string).toLowerCase());
    });
    // PUBLISH, or SPUBLISH where the client's channel is a shard channel (a cluster).
    const published = (): boolean => /^s?publish$/.test(inRelease.at(-1) ?? '');
    try {
      await redis.admin().ping();
      await holder.unlock();
      await handedOver;
      // MONITOR's lines may reach its connection after the message reached the waiter's.
      await eventually('the release seen', published);
    } finally {
      monitor.disconnect();
    }
    expect(inRelease.slice(0, -1)).toEqual([
      'hmget',
      'del',
      'exists',
      'lindex',
      'time',
      'zrangebyscore',
      'hset',
      'pexpire',
      'hset',
      'pexpire',
      'hget',
    ]);
    await waiter.unlock();
  });

  test('a re-entry whose hold Redis no longer has queues: it holds at the next release, in turn', async () => {
    const name = 'fair-reentry-of-a-lost-hold';
    const a = redis.client({ watchdogTimeout: 3_000 }).getFairLock(name);
    const b = redis.client({ watchdogTimeout: 3_000 }).getFairLock(name);
    await a.lock();
    // Gone from Redis while A's client still counts it (an operator's DEL; forceUnlock elsewhere).
    await redis.admin().del(name);
    await b.lock();
    let heldAt = 0;
    const reentry = a.lock().then(() => (heldAt = performance.now()));
    await sleep(300);
    const releasedAt = performance.now();
    await b.unlock();
    await reentry;
    // At B's release, not when B's lease would have run out (3 s).
    expect(heldAt - releasedAt).toBeLessThan(1_000);
    await a.unlock().catch(() => undefined);
    await a.unlock().catch(() => undefined);
  });

  test('a waiter that times out leaves no place behind', async () => {
    const client = redis.client();
    await client.getFairLock('fair-timeout').lock();
    expect(await client.getFairLock('fair-timeout').tryLock(200)).toBe(false);
    expect(await redis.admin().exists(queueKey('fair-timeout'), deadlinesKey('fair-timeout'))).toBe(0);
  });

  test('an aborted waiter leaves no place, and the turn passes to the one behind it', async () => {
    const client = redis.client();
    const admin = redis.admin();
    const holder = client.getFairLock('fair-abort');
    await holder.lock();
    const controller = new AbortController();
    const first = client.runInTask(() =>
      client.getFairLock('fair-abort').lock({ signal: controller.signal }),
    );
    first.catch(() => undefined);
    await eventually('first queued', async () => (await admin.llen(queueKey('fair-abort'))) === 1);
    let secondGot = false;
    await queueUp(admin, client, 'fair-abort', async (lock) => {
      secondGot = true;
      await lock.unlock();
    });
    controller.abort(new Error('gave up'));
    await expect(first).rejects.toThrow('gave up');
    await eventually('first left the queue', async () => (await admin.llen(queueKey('fair-abort'))) === 1);
    await holder.unlock();
    await eventually('second holds', () => secondGot);
  });

  test('a waiter kept waiting for 4x fairLockWaitTimeout keeps its place', async () => {
    const client = redis.client({ fairLockWaitTimeout: 400 });
    const admin = redis.admin();
    const holder = client.getFairLock('fair-patient');
    await holder.lock();
    const order: string[] = [];
    const { done: a } = await queueUp(admin, client, 'fair-patient', async (lock) => {
      order.push('a');
      await lock.unlock();
    });
    const { done: b } = await queueUp(admin, client, 'fair-patient', async (lock) => {
      order.push('b');
      await lock.unlock();
    });
    await sleep(1_600);
    expect(await admin.llen(queueKey('fair-patient'))).toBe(2);
    await holder.unlock();
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'b']);
  });

  test('a holder whose lease ends without a release does not stall the queue', async () => {
    const client = redis.client();
    const admin = redis.admin();
    await client.getFairLock('fair-expire').lock(500);
    const started = performance.now();
    let gotAt = 0;
    await queueUp(admin, client, 'fair-expire', async (lock) => {
      gotAt = performance.now();
      await lock.unlock();
    });
    await eventually('waiter holds', () => gotAt > 0, 3_000);
    expect(gotAt - started).toBeLessThan(1_000);
  });

  test('40 waiters of one client look at the holder once per its ttl, not each of them', async () => {
    const admin = redis.admin();
    // A lease of 2 s, renewed every 667 ms: a waiter that slept on the ttl it saw would try again
    // about every 1.5 s. (Not shorter: on a busy machine a renewal late by the rest of the lease
    // lets the lease end, and the hand-over that follows is not what is counted here.)
    // The handle is kept until the end: a handle collected while it holds is orphaned, and its
    // lease is no longer renewed.
    const holder = redis.client({ watchdogTimeout: 2_000 }).getFairLock('fair-watch');
    await holder.lock();
    const connection = redis.connect();
    const client = redis.client({ fairLockWaitTimeout: 60_000 }, connection); // no refresh meanwhile
    const order: number[] = [];
    const waits = [];
    for (let i = 0; i < 40; i += 1) {
      const { done } = await queueUp(admin, client, 'fair-watch', async (lock) => {
        order.push(i);
        await lock.unlock();
      });
      waits.push(done);
    }
    // Under load the hand-off channel's subscription may be confirmed late, and until it is the
    // waiters look again every UNCONFIRMED_POLL_MS: count only once it listens, and once the looks
    // of waiters whose last short sleep ended just then have reached Redis (on a busy machine they
    // trail the sleep by a few hundred ms).
    const channel = handoffChannelOf(client, 'fair-watch');
    await eventually('the hand-off channel subscribed', async () => {
      const counts = await redis.everyMaster(async (node) => {
        const [, classic] = (await node.pubsub('NUMSUB', channel)) as [string, number];
        const [, sharded] = (await node.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
        return Number(classic) + Number(sharded);
      });
      return counts.some((count) => count > 0);
    });
    await sleep(3 * UNCONFIRMED_POLL_MS);
    let attempts = 0;
    const send = connection.sendCommand.bind(connection);
    connection.sendCommand = (command, ...rest) => {
      // The acquire script is the one with eight keys sent while nothing is released.
      if ((command.name === 'evalsha' || command.name === 'eval') && Number(command.args[1]) === 8) {
        attempts += 1;
      }
      return send(command, ...rest);
    };
    await sleep(4_000);
    expect(attempts).toBeGreaterThanOrEqual(1);
    expect(attempts).toBeLessThanOrEqual(10);
    expect(await holder.isHeldByCurrentTask()).toBe(true);
    await admin.del('fair-watch'); // the holder's lease ends without a release
    await Promise.all(waits);
    expect(order).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  test('the watch on the holder outlives the waiter whose answer set it', async () => {
    const admin = redis.admin();
    const client = redis.client();
    await redis.client().getFairLock('fair-watch-left').lock(1_500);
    const heldAt = performance.now();
    // a queues first and gives up last: its final attempt sets when the client looks again.
    const a = client.runInTask(() => client.getFairLock('fair-watch-left').tryLock(400));
    await eventually('a queued', async () => (await admin.llen(queueKey('fair-watch-left'))) === 1);
    let gotAt = 0;
    await queueUp(admin, client, 'fair-watch-left', async (lock) => {
      gotAt = performance.now();
      await lock.unlock();
    });
    expect(await a).toBe(false);
    // The lease ends without a release: b holds at once, not at the next refresh of its place (3.3 s).
    await eventually('b holds', () => gotAt > 0, 5_000);
    expect(gotAt - heldAt).toBeLessThan(1_500 + 500);
  });

  test('a forced delete hands the lock to the next waiter', async () => {
    const client = redis.client();
    const admin = redis.admin();
    await client.getFairLock('fair-force').lock();
    let got = false;
    await queueUp(admin, client, 'fair-force', async (lock) => {
      got = true;
      await lock.unlock();
    });
    expect(await client.getFairLock('fair-force').forceUnlock()).toBe(true);
    await eventually('waiter holds', () => got, 1_000);
  });

  test('a forced delete right after a hand-off, before it is confirmed, frees the lock for good', async () => {
    const holder = redis.client();
    const waiter = redis.client();
    const held = holder.getFairLock('fair-force-handoff');
    await held.lock();
    const waiting = waiter.getFairLock('fair-force-handoff').tryLock(5_000, 5_000);
    await sleep(100);
    await held.unlock();
    expect(await waiting).toBe(true);
    // In the same turn as the wait's answer: its confirmation has not gone out yet.
    const lost: LockLostEvent[] = [];
    waiter.on('lockLost', (event) => lost.push(event));
    expect(await waiter.getFairLock('fair-force-handoff').forceUnlock()).toBe(true);
    expect(await holder.getLock('fair-force-handoff').tryLock(0, 5_000)).toBe(true);
    expect(lost.map((event) => event.code)).toEqual(['force-unlocked']);
  });

  test('a hand-off whose message was lost is found by the waiter after the reconnect', async () => {
    const holderClient = redis.client({ watchdogTimeout: 20_000 });
    const waiterClient = redis.client();
    const admin = redis.admin();
    const holder = holderClient.getFairLock('fair-lost-message');
    await holder.lock();
    let gotAt = 0;
    await queueUp(admin, waiterClient, 'fair-lost-message', async (lock) => {
      gotAt = performance.now();
      await lock.unlock();
    });
    await redis.killPubSub();
    const releasedAt = performance.now();
    await holder.unlock();
    await eventually('waiter holds', () => gotAt > 0, 5_000);
    expect(gotAt - releasedAt).toBeLessThan(2_000);
  });

  test('a hand-off nobody confirms comes back after fairLockHandoffTimeout; the waiter passed over keeps its place', async () => {
    const admin = redis.admin();
    const name = 'fair-passed-over';
    const handoffTimeout = 500;
    const holder = redis.client({ fairLockHandoffTimeout: handoffTimeout }).getFairLock(name);
    await holder.lock();
    // A waiter of another client, alive (its place is fresh) but deaf: it never confirms.
    await placeInQueue(admin, name, 'deaf-client:1', 60_000);
    const client = redis.client({ fairLockHandoffTimeout: handoffTimeout });
    const order: string[] = [];
    const next = await queueUp(admin, client, name, async (lock) => {
      order.push('next');
      await sleep(200);
      await lock.unlock();
    });
    const releasedAt = performance.now();
    await holder.unlock();
    await eventually('the next waiter holds', () => order.length === 1, 5_000);
    const after = performance.now() - releasedAt;
    expect(after).toBeGreaterThanOrEqual(handoffTimeout - 5);
    expect(after).toBeLessThan(handoffTimeout + 1_000);
    // Passed over, not dropped: still first in the queue.
    expect(await admin.lrange(queueKey(name), 0, -1)).toEqual(['deaf-client:1']);
    expect(await admin.hgetall(`rlock_fair_handoff:{${name}}`)).toEqual({ 'deaf-client:1': 's' });
    // Alive again (an attempt of its own), it is next, ahead of a waiter that queued after it.
    const deaf = client.runInTask(
      async () => {
        const lock = client.getFairLock(name);
        await lock.lock();
        order.push('deaf');
        await lock.unlock();
      },
      { ownerId: 'deaf-client:1' },
    );
    const last = await queueUp(admin, client, name, async (lock) => {
      order.push('last');
      await lock.unlock();
    });
    await Promise.all([next.done, deaf, last.done]);
    expect(order).toEqual(['next', 'deaf', 'last']);
  });

  test("a hand-off to one of this client's owners that no longer waits is given back at once", async () => {
    const admin = redis.admin();
    const name = 'fair-unclaimed';
    // Hand-offs that nobody confirms would wait 5 s: what comes sooner was given back.
    const holder = redis.client({ fairLockHandoffTimeout: 5_000 }).getFairLock(name);
    await holder.lock();
    const client = redis.client({ fairLockHandoffTimeout: 5_000 });
    // A place of this client's that its wait left behind (its leave never reached Redis).
    await placeInQueue(admin, name, `${client.id}:999999`, 60_000, client);
    let gotAt = 0;
    const next = await queueUp(admin, client, name, async (lock) => {
      gotAt = performance.now();
      await lock.unlock();
    });
    const releasedAt = performance.now();
    await holder.unlock();
    await next.done;
    expect(gotAt - releasedAt).toBeLessThan(1_000);
    expect(await admin.llen(queueKey(name))).toBe(0);
  });

  test('watchdog and lockLost work as for getLock', async () => {
    const client = redis.client({ watchdogTimeout: 600 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    const lock = client.getFairLock('fair-watchdog');
    await lock.lock();
    await sleep(1_500);
    expect(await lock.isHeldByCurrentTask()).toBe(true);
    await redis.admin().del('fair-watchdog');
    await eventually('lockLost', () => lost.length === 1, 2_000);
  });

  // RedissonFairLockTest, translated.
  test('lease-timeout ordering: waiters with leases still acquire in arrival order', async () => {
    const client = redis.client();
    const admin = redis.admin();
    await client.getFairLock('fair-lease-order').lock(300);
    const order: number[] = [];
    const waits = [];
    for (let i = 0; i < 5; i += 1) {
      const before = await admin.llen(queueKey('fair-lease-order'));
      waits.push(
        client.runInTask(async () => {
          const lock = client.getFairLock('fair-lease-order');
          if (await lock.tryLock(5_000, 100)) order.push(i);
        }),
      );
      await eventually('queued', async () => (await admin.llen(queueKey('fair-lease-order'))) > before);
    }
    await Promise.all(waits);
    // Nobody unlocks: each lease of 100 ms runs out and the next waiter in line takes over.
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  // RedissonFairLockTest.testLeaseTimeout, translated: 8 tasks 100 ms apart, each tryLock(10 s,
  // lease 1 s) and never unlocking. Every lease ends without a release; the next in line must hold
  // the lock as it ends, not at the next refresh of its place.
  test('leases that end without a release hand the lock on within ~100 ms, every time', async () => {
    const client = redis.client();
    const acquiredAt: number[] = [];
    const tasks = Array.from({ length: 8 }, (_, i) =>
      sleep(i * 100).then(() =>
        client.runInTask(async () => {
          if (await client.getFairLock('fair-lease-timeout').tryLock(10_000, 1_000)) {
            acquiredAt.push(performance.now());
          }
        }),
      ),
    );
    await Promise.all(tasks);
    const gaps = acquiredAt.slice(1).map((at, i) => at - (acquiredAt[i] as number));
    process.stdout.write(`[fair] hand-over gaps after lease ends: ${gaps.map(Math.round).join(', ')} ms\n`);
    expect(acquiredAt).toHaveLength(8);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThan(950);
      expect(gap).toBeLessThan(1_000 + 150);
    }
  }, 20_000);

  test('a newcomer that finds the lock free with a live waiter queued waits behind it', async () => {
    // A free lock with a queue: the holder's lease ran out and nobody handed it on yet. The first
    // attempt of lock() answers that with a full attempt, not by taking the lock.
    const admin = redis.admin();
    const client = redis.client();
    const name = 'fair-free-with-queue';
    await placeInQueue(admin, name, 'other-client:1', 60_000);
    expect(await client.getFairLock(name).tryLock(300, 10_000)).toBe(false);
    // The full attempt handed the lock to the waiter whose turn it was.
    expect(await holderIds(admin, name)).toEqual(['other-client:1']);
    expect(await client.getFairLock(name).tryLock()).toBe(false);
  });

  test('a newcomer that finds the lock free with only dead waiters queued takes it', async () => {
    const admin = redis.admin();
    const client = redis.client();
    for (const [name, take] of [
      ['fair-free-dead-queue-lock', (lock: RLock) => lock.lock()],
      ['fair-free-dead-queue-try', (lock: RLock) => lock.tryLock()],
    ] as const) {
      await placeInQueue(admin, name, 'gone-client:1', -1_000);
      const lock = client.getFairLock(name);
      await take(lock);
      expect(await lock.isHeldByCurrentTask()).toBe(true);
      expect(await admin.llen(queueKey(name))).toBe(0);
      await lock.unlock();
    }
  });

  test('a wait whose time runs out on its first look still settles a free lock with dead waiters', async () => {
    // The first attempt leaves a free lock with waiters queued to the full script; a wait that is
    // over by the time that answer comes still sends the full script once, as tryLock() does.
    const admin = redis.admin();
    const client = redis.client();
    const name = 'fair-short-wait-dead-queue';
    await placeInQueue(admin, name, 'gone-client:1', -1_000);
    const lock = client.getFairLock(name);
    const taking = lock.tryLock(1, 10_000);
    // The event loop is busy until the 1 ms wait is over: its first answer comes too late.
    const busyUntil = Date.now() + 20;
    while (Date.now() < busyUntil);
    expect(await taking).toBe(true);
    expect(await admin.llen(queueKey(name))).toBe(0);
    await lock.unlock();
  });

  test('waits of one owner share one hand-off: the second is a re-entry, not a second claim', async () => {
    const admin = redis.admin();
    const name = 'fair-one-owner-two-waits';
    const { first, lock, lost } = await heldByAnother(name);
    // One handle outside a task: one owner, whose two lock() calls wait together.
    const both = Promise.all([lock.lock(), lock.lock()]);
    await eventually('queued', async () => (await admin.llen(queueKey(name))) === 1);
    await sleep(100);
    await first.unlock();
    await both;
    // A hand-off's hold is counted in Redis once its confirmation lands (in the background).
    await eventually('both holds counted in Redis', async () => (await lock.getHoldCount()) === 2);
    expect(Object.values(await holdCounts(admin, name))).toEqual(['2']);
    await lock.unlock();
    expect(await redis.client().getFairLock(name).tryLock()).toBe(false);
    await lock.unlock();
    expect(await admin.exists(name)).toBe(0);
    expect(lost).toEqual([]);
  });

  test('a wait of one owner aborted as the lock is handed over leaves the hand-off to its sibling', async () => {
    const admin = redis.admin();
    const name = 'fair-sibling-abort-at-handoff';
    const { first, lock, lost } = await heldByAnother(name);
    const { controller, aborted, kept } = twoWaitsOfOneOwner(lock);
    await eventually('queued', async () => (await admin.llen(queueKey(name))) === 1);
    await sleep(100);
    // The give-up of the aborted wait reaches Redis just after the release that granted its owner.
    const releasing = first.unlock();
    controller.abort(new Error('gave up'));
    await releasing;
    await expect(aborted).rejects.toThrow('gave up');
    await kept;
    await eventually('the hold counted in Redis', async () => (await lock.getHoldCount()) === 1);
    await sleep(100);
    expect(Object.values(await holdCounts(admin, name))).toEqual(['1']);
    expect(await redis.client().getFairLock(name).tryLock()).toBe(false);
    await lock.unlock();
    expect(await admin.exists(name)).toBe(0);
    expect(lost).toEqual([]);
  });

  test('a wait of one owner that gives up leaves the owner its place while another wait remains', async () => {
    const admin = redis.admin();
    const name = 'fair-sibling-abort-keeps-place';
    const { first, lock } = await heldByAnother(name);
    const { controller, aborted, kept } = twoWaitsOfOneOwner(lock);
    await eventually('owner queued', async () => (await admin.llen(queueKey(name))) === 1);
    let behindGot = false;
    await queueUp(admin, redis.client(), name, async (behind) => {
      behindGot = true;
      await behind.unlock();
    });
    const queue = await admin.lrange(queueKey(name), 0, -1);
    controller.abort(new Error('gave up'));
    await expect(aborted).rejects.toThrow('gave up');
    await sleep(200);
    expect(await admin.lrange(queueKey(name), 0, -1)).toEqual(queue);
    await first.unlock();
    await kept;
    expect(behindGot).toBe(false);
    await lock.unlock();
    await eventually('the one behind holds', () => behindGot);
  });

  test('the last wait of an owner to end gives up its place when the client closes', async () => {
    const admin = redis.admin();
    const holder = redis.client();
    const client = redis.client({ fairLockWaitTimeout: 60_000 });
    const name = 'fair-siblings-closed';
    await holder.getFairLock(name).lock();
    const lock = client.getFairLock(name);
    const waits = [lock.lock(), lock.lock(), lock.lock()];
    for (const wait of waits) wait.catch(() => undefined);
    await eventually('owner queued', async () => (await admin.llen(queueKey(name))) === 1);
    await sleep(100);
    await client.close();
    for (const wait of waits) await expect(wait).rejects.toMatchObject({ code: 'ERR_CLIENT_CLOSED' });
    await eventually('the place is gone', async () => (await admin.llen(queueKey(name))) === 0);
    expect(await admin.exists(deadlinesKey(name))).toBe(0);
  });

  test('the queue of waiters that all died is gone within fairLockWaitTimeout, untouched', async () => {
    const holder = redis.client();
    const admin = redis.admin();
    await holder.getFairLock('fair-dead-queue').lock();
    const workers = Array.from({ length: 3 }, () =>
      startWorker([String(redis.port()), 'wait', 'fair-dead-queue'], {
        LOCK_KIND: 'fair',
        FAIR_LOCK_WAIT_TIMEOUT: '600',
      }),
    );
    try {
      expect(await Promise.all(workers.map((worker) => worker.firstMessage))).toEqual([
        'started',
        'started',
        'started',
      ]);
      await eventually('queued', async () => (await admin.llen(queueKey('fair-dead-queue'))) === 3, 10_000);
      expect(await admin.pttl(queueKey('fair-dead-queue'))).toBeGreaterThan(0);
      expect(await admin.pttl(deadlinesKey('fair-dead-queue'))).toBeGreaterThan(0);
    } finally {
      // The waiters die without leaving the queue, and nobody touches the lock again.
      for (const worker of workers) worker.child.kill('SIGKILL');
    }
    await sleep(600 + 300);
    expect(await admin.exists(queueKey('fair-dead-queue'), deadlinesKey('fair-dead-queue'))).toBe(0);
    expect(await admin.exists('fair-dead-queue')).toBe(1);
  }, 30_000);

  test('500 tasks on one lock keep a counter exact and are served in arrival order', async () => {
    const client = redis.client();
    const admin = redis.admin();
    const holder = client.getFairLock('fair-500');
    await holder.lock();
    let counter = 0;
    const grants: string[] = [];
    const tasks = Array.from({ length: 500 }, () =>
      client.runInTask(async () => {
        const lock = client.getFairLock('fair-500');
        await lock.lock();
        const [owner] = await holderIds(admin, 'fair-500');
        grants.push(owner as string);
        const value = counter;
        await sleep(0);
        counter = value + 1;
        await lock.unlock();
      }),
    );
    await eventually('all queued', async () => (await admin.llen(queueKey('fair-500'))) === 500, 10_000);
    const snapshot = await admin.lrange(queueKey('fair-500'), 0, -1);
    await holder.unlock();
    await Promise.all(tasks);
    expect(counter).toBe(500);
    expect(grants).toEqual(snapshot);
  }, 30_000);

  test('several clients in one process are served in arrival order', async () => {
    const admin = redis.admin();
    const clients = [redis.client(), redis.client(), redis.client()];
    const holder = clients[0]!.getFairLock('fair-multi');
    await holder.lock();
    const order: number[] = [];
    const waits = [];
    for (let i = 0; i < 9; i += 1) {
      const { done } = await queueUp(admin, clients[i % 3]!, 'fair-multi', async (lock) => {
        order.push(i);
        await lock.unlock();
      });
      waits.push(done);
    }
    await holder.unlock();
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  test('the FIFO checker catches an overtake (negative control)', () => {
    expect(fifoViolations([['a', 'b', 'c']], ['a', 'b', 'c'])).toEqual([]);
    expect(fifoViolations([['a', 'b', 'c']], ['a', 'c', 'b'])).toHaveLength(1);
  });
});
