import type Redis from 'ioredis';
import { type LockLostEvent } from '../../src';
import { lockWakeChannel } from '../../src/protocol/keys';
import { hashSlot } from '../../src/redis/slots';
import type { RedisServer } from '../helpers/redis-server';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';
import { expectWokenByRelease } from '../helpers/wake';

/**
 * What only a cluster has: slots, sharded pub/sub, per-slot batches. Runs in the cluster project
 * (a 3-master cluster); the portable test files prove the rest of the behaviour there too.
 */
describe('on a Redis Cluster', () => {
  const redis = useRedis();

  /** Every key of locks in the cluster (not the clients' own entries), with its slot. */
  async function keysBySlot(): Promise<Map<number, string[]>> {
    const keys = (await redis.everyMaster((node) => node.keys('*')))
      .flat()
      .filter((key) => !key.startsWith('rlock_client:'));
    const slots = new Map<number, string[]>();
    for (const key of keys) slots.set(hashSlot(key), [...(slots.get(hashSlot(key)) ?? []), key]);
    return slots;
  }

  test.each(['orders:1', '{tenant-7}:orders', 'a{b', 'a}b', '{}x', '}{', 'x{}'])(
    'every key of lock %j lives in one slot, and every lock kind works on it',
    async (name) => {
      const client = redis.client();
      const other = redis.client();
      const fair = client.getFairLock(name);
      await fair.lock(10_000);
      // A waiter on the fair lock puts queue, deadlines and hand-off keys next to the hash.
      const waiting = other.getFairLock(name).tryLock(5_000, 5_000);
      await sleep(100);
      const fenced = await other.getFencedLock(`${name}`).tryLockAndGetToken(0, 5_000);
      expect(fenced).toBeNull();
      const slots = await keysBySlot();
      expect([...slots.keys()]).toEqual([hashSlot(name)]);
      expect(slots.get(hashSlot(name))).toEqual(expect.arrayContaining([name]));
      await fair.unlock();
      expect(await waiting).toBe(true);
      await other.getFairLock(name).forceUnlock();
      const token = await client.getFencedLock(name).tryLockAndGetToken(0, 5_000);
      expect(token).toBeGreaterThan(0);
      expect([...(await keysBySlot()).keys()]).toEqual([hashSlot(name)]);
    },
  );

  test.each(['orders:1', '{tenant-7}:orders', 'a{b', 'a}b', '}{'])(
    'every key of semaphore and latch %j lives in one slot, and waiters wake there',
    async (name) => {
      const client = redis.client();
      const semaphore = client.getPermitExpirableSemaphore(name);
      await semaphore.trySetPermits(1);
      const id = await semaphore.acquire({ leaseTime: 10_000 });
      const waiting = redis.client().getPermitExpirableSemaphore(name).tryAcquire({ waitTime: 5_000 });
      await sleep(200);
      await semaphore.release(id);
      expect(await waiting).toMatch(/^[0-9a-f]{32}$/);
      expect([...(await keysBySlot()).keys()]).toEqual([hashSlot(name)]);
      // A latch is another object: it needs the name to itself.
      await redis.everyMaster((node) => node.flushall());
      const latch = client.getCountDownLatch(name);
      await latch.trySetCount(1);
      const opened = redis.client().getCountDownLatch(name).await({ waitTime: 5_000 });
      await sleep(200);
      await latch.countDown();
      expect(await opened).toBe(true);
      expect([...(await keysBySlot()).keys()]).toEqual([hashSlot(name)]);
    },
  );

  /** PUBSUB counters of one node: [classic subscribers, shard subscribers] of a channel. */
  async function subscribers(node: Redis, channel: string): Promise<[number, number]> {
    const classic = (await node.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
    const sharded = (await node.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
    return [Number(classic[1]), Number(sharded[1])];
  }

  test('a waiter listens with SSUBSCRIBE on the master of its lock, and a release reaches that shard only', async () => {
    const holder = redis.client();
    const waiter = redis.client();
    const lock = holder.getLock('sharded');
    await lock.lock();
    const waiting = waiter.getLock('sharded').tryLock(5_000);
    await sleep(200);
    // Behind an rlock holder, a waiting client listens on a channel of its own in the lock's slot.
    const channel = lockWakeChannel('sharded', waiter.id, true);
    const counts = await redis.everyMaster((node) => subscribers(node, channel));
    // One master has the shard subscription; nobody has a classic one.
    expect(counts.filter(([, sharded]) => sharded === 1)).toHaveLength(1);
    expect(counts.every(([classic]) => classic === 0)).toBe(true);
    await redis.resetStats();
    await lock.unlock();
    expect(await waiting).toBe(true);
    expect(await redis.commandCalls('publish')).toBe(0);
    // Redisson's message on the lock's channel, and the wake-up of the one waiting client.
    expect(await redis.commandCalls('spublish')).toBe(2);
  });

  test("pubSub: 'classic' works on a cluster too (PUBLISH, broadcast by the cluster bus)", async () => {
    await redis.resetStats();
    const holder = redis.client({ pubSub: 'classic' });
    const waiter = redis.client({ pubSub: 'classic' });
    for (const name of ['classic-a', 'classic-b', 'classic-c']) {
      await expectWokenByRelease(holder, waiter, 'getLock', name);
    }
    const fair = holder.getFairLock('classic-fair');
    await fair.lock();
    const fairWaiting = waiter.getFairLock('classic-fair').tryLock(5_000);
    await sleep(100);
    await fair.unlock();
    expect(await fairWaiting).toBe(true);
    expect(await redis.commandCalls('spublish')).toBe(0);
  });

  test('when the slot of a lock moves to another master, its waiters follow it', async () => {
    const holder = redis.client();
    const waiter = redis.client();
    const lock = holder.getLock('{moving}:lock');
    const fair = holder.getFairLock('{moving}:fair');
    await lock.lock();
    await fair.lock();
    const waits = [
      waiter.getLock('{moving}:lock').tryLock(20_000),
      waiter.getFairLock('{moving}:fair').tryLock(20_000),
    ];
    await sleep(200);
    const from = await redis.cluster().masterOf('{moving}');
    const to = redis.cluster().nodes.find((node) => node !== from) as RedisServer;
    await redis.cluster().migrateSlotOf('{moving}', to);
    await sleep(300);
    // The waiter's shard subscription is on the new owner of the slot now.
    const [, listeners] = (await to
      .connect()
      .call('PUBSUB', 'SHARDNUMSUB', lockWakeChannel('{moving}:lock', waiter.id, true))) as [string, number];
    expect(Number(listeners)).toBe(1);
    const releasedAt = performance.now();
    await lock.unlock();
    await fair.unlock();
    expect(await Promise.all(waits)).toEqual([true, true]);
    // Woken by the releases on the new master: not by the slot-map poll (5 s), nor the 30 s lease.
    expect(performance.now() - releasedAt).toBeLessThan(1_500);
  });

  test('a MultiLock over locks in different slots of one cluster is all or nothing', async () => {
    const client = redis.client();
    const other = redis.client();
    const names = ['multi-a', 'multi-b', 'multi-c'];
    expect(new Set(names.map(hashSlot)).size).toBe(3);
    const group = client.getMultiLock(...names.map((name) => client.getLock(name)));
    // One EXISTS per key: a multi-key command across slots is itself a CROSSSLOT error.
    const existing = async (...keys: string[]): Promise<number> =>
      (await Promise.all(keys.map((key) => redis.admin().exists(key)))).reduce((sum, n) => sum + n, 0);
    await other.getLock('multi-b').lock(10_000);
    expect(await group.tryLock(300, 5_000)).toBe(false);
    // Nothing partial left behind: a member whose answer came after the round was decided (a busy
    // machine) is given back as soon as it arrives, not before the call returns.
    await eventually('the free members given back', async () => (await existing('multi-a', 'multi-c')) === 0);
    await other.getLock('multi-b').forceUnlock();
    expect(await group.tryLock(1_000, 5_000)).toBe(true);
    expect(await existing(...names)).toBe(3);
    await group.unlock();
    expect(await existing(...names)).toBe(0);
  });

  test('the watchdog renews locks spread over many slots with one script call per slot', async () => {
    const client = redis.client({ watchdogTimeout: 900 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    // 12 slots, 10 locks in each (a shared hash tag per group).
    const names = Array.from({ length: 120 }, (_, i) => `{group-${i % 12}}:lock-${i}`);
    const slots = new Set(names.map(hashSlot));
    expect(slots.size).toBe(12);
    const locks = names.map((name) => client.getLock(name));
    await Promise.all(locks.map((lock) => lock.lock()));
    await sleep(100);
    await redis.resetStats();
    await sleep(1_000); // about three periods of 300 ms
    const calls = await redis.scriptCalls();
    expect(calls % slots.size).toBe(0);
    expect(calls / slots.size).toBeGreaterThanOrEqual(2);
    expect(calls / slots.size).toBeLessThanOrEqual(4);
    expect(lost).toEqual([]);
    const held = await Promise.all(locks.map((lock) => lock.remainTimeToLive()));
    expect(held.every((ttl) => ttl > 0 && ttl <= 900)).toBe(true);
    await Promise.all(locks.map((lock) => lock.unlock()));
  });

  test('fair places spread over many slots are kept alive', async () => {
    const holder = redis.client();
    const waiter = redis.client({ fairLockWaitTimeout: 300 });
    const names = Array.from({ length: 6 }, (_, i) => `fair-spread-${i}`);
    expect(new Set(names.map(hashSlot)).size).toBe(6);
    await Promise.all(names.map((name) => holder.getFairLock(name).lock(20_000)));
    const waits = names.map((name) => waiter.getFairLock(name).tryLock(5_000, 1_000));
    // Many refresh periods: a place not refreshed would be dropped after 300 ms.
    await sleep(1_200);
    for (const name of names) expect(await redis.admin().llen(`rlock_fair_queue:{${name}}`)).toBe(1);
    await Promise.all(names.map((name) => holder.getFairLock(name).forceUnlock()));
    expect(await Promise.all(waits)).toEqual(names.map(() => true));
  });
});
