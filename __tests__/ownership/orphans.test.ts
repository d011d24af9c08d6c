import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LockNotHeldError, type LockClient, type LockLostEvent } from '../../src';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';

// The garbage collector on demand, as `node --expose-gc` would give it.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects garbage until `check` holds (finalizers run after a collection, on a later turn). */
async function collectUntil(what: string, check: () => boolean): Promise<void> {
  await eventually(
    what,
    async () => {
      gc();
      await sleep(20);
      return check();
    },
    5_000,
  );
}

describe('handles and tasks that are dropped while they hold a lock', () => {
  const redis = useRedis();

  /** Takes `name` through a handle nothing keeps: the Redisson habit of getLock(x).lock(). */
  async function lockAndDrop(client: LockClient, name: string): Promise<void> {
    await client.getLock(name).lock();
  }

  test('a handle garbage-collected while the watchdog renews its hold: reported, no longer renewed', async () => {
    const client = redis.client({ watchdogTimeout: 1_000 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    await lockAndDrop(client, 'forgotten');
    expect(await redis.admin().exists('forgotten')).toBe(1);
    await collectUntil('the orphan reported', () => lost.length > 0);
    expect(lost).toEqual([expect.objectContaining({ name: 'forgotten', code: 'orphaned' })]);
    // Not renewed any more: gone within one lease.
    await eventually('expired', async () => (await redis.admin().exists('forgotten')) === 0, 1_500);
  });

  test('a task that took a lock by hand and ended without unlocking: reported the same way', async () => {
    const client = redis.client({ watchdogTimeout: 1_000 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    await client.runInTask(() => client.getLock('forgotten-in-task').lock());
    await collectUntil('the orphan reported', () => lost.length > 0);
    expect(lost).toEqual([expect.objectContaining({ name: 'forgotten-in-task', code: 'orphaned' })]);
  });

  test('a fixed lease never unlocked on purpose (a rate window) is not reported when its handle goes', async () => {
    const client = redis.client();
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    await (async () => {
      await client.getLock('rate-window').tryLock(0, 10_000);
    })();
    for (let i = 0; i < 5; i += 1) {
      gc();
      await sleep(50);
    }
    expect(lost).toEqual([]);
    // Still there, with most of its lease (the collections above take a while on a busy machine).
    expect(await redis.admin().pttl('rate-window')).toBeGreaterThan(5_000);
  });

  test('a MultiLock dropped while it holds: its members are found orphaned too', async () => {
    const client = redis.client({ watchdogTimeout: 1_000 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    await (async () => {
      await client.getMultiLock(client.getLock('group-a'), client.getLock('group-b')).lock();
    })();
    await collectUntil('the members reported', () => lost.length >= 2);
    expect(lost.map((event) => [event.name, event.code]).sort()).toEqual([
      ['group-a', 'orphaned'],
      ['group-b', 'orphaned'],
    ]);
    await eventually('expired', async () => (await redis.admin().exists('group-a', 'group-b')) === 0, 1_500);
  });

  test('close() releases what orphaned holders left, so waiters elsewhere need not wait out the lease', async () => {
    const client = redis.client({ watchdogTimeout: 10_000 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    await lockAndDrop(client, 'orphan-at-close');
    await collectUntil('the orphan reported', () => lost.length > 0);
    expect(await redis.admin().exists('orphan-at-close')).toBe(1);
    await client.close();
    expect(await redis.admin().exists('orphan-at-close')).toBe(0);
  });

  test('a handle still referenced keeps its lock through collections (negative control)', async () => {
    const client = redis.client({ watchdogTimeout: 1_000 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    const kept = client.getLock('kept');
    await kept.lock();
    for (let i = 0; i < 10; i += 1) {
      gc();
      await sleep(150);
    }
    expect(lost).toEqual([]);
    expect(await kept.isHeldByCurrentTask()).toBe(true);
    await kept.unlock();
  });

  test('unlock() through another handle says which owner holds it and what to do', async () => {
    const client = redis.client();
    const first = client.getLock('two-handles');
    await first.lock();
    const error = await client
      .getLock('two-handles')
      .unlock()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotHeldError);
    expect((error as Error).message).toMatch(/holds it for another owner/);
    expect((error as Error).message).toMatch(/unlock through the handle that locked it/);
    await first.unlock();
  });

  test('unlock() after the lease ran out says so', async () => {
    const client = redis.client();
    const lock = client.getLock('ran-out');
    await lock.lock(100);
    await sleep(200);
    await expect(lock.unlock()).rejects.toThrow(/lease ran out while it was held \(lease-expired\)/);
  });
});
