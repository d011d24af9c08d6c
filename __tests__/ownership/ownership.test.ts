import { hostname } from 'node:os';
import type { LockClient, RLock } from '../../src';
import { holdCounts, holderIds } from '../helpers/holders';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';
import { startWorker } from '../helpers/workers';

describe('ownership through async call chains', () => {
  const redis = useRedis();

  test('nested withLock on one name re-enters instead of deadlocking', async () => {
    const client = redis.client();
    const counts: number[] = [];
    const inner = async (): Promise<void> => {
      await client.getLock('nested').withLock(async () => {
        counts.push(await client.getLock('nested').getHoldCount());
      });
    };
    await client.getLock('nested').withLock(async () => {
      counts.push(await client.getLock('nested').getHoldCount());
      await inner();
      counts.push(await client.getLock('nested').getHoldCount());
    });
    expect(counts).toEqual([1, 2, 1]);
    expect(await client.getLock('nested').isLocked()).toBe(false);
  });

  test('every handle in a task acts for the task, across awaits and timers', async () => {
    const client = redis.client();
    await client.runInTask(async () => {
      await client.getLock('task').lock();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await client.getLock('task').tryLock()).toBe(true);
      expect(await client.getLock('task').getHoldCount()).toBe(2);
      await client.getLock('task').unlock();
      await client.getLock('task').unlock();
    });
    expect(await client.getLock('task').isLocked()).toBe(false);
  });

  test('concurrent tasks are different owners and exclude each other', async () => {
    const client = redis.client();
    const events: string[] = [];
    const task = (id: string) =>
      client.runInTask(async () => {
        const lock = client.getLock('tasks');
        await lock.lock();
        events.push(`${id} in`);
        await sleep(50);
        events.push(`${id} out`);
        await lock.unlock();
      });
    await Promise.all([task('a'), task('b'), task('c')]);
    for (let i = 0; i < events.length; i += 2) {
      expect(events[i]?.split(' ')[0]).toBe(events[i + 1]?.split(' ')[0]);
    }
  });

  test('runInTask inside a task starts a new owner', async () => {
    const client = redis.client();
    await client.runInTask(async () => {
      await client.getLock('fork').lock();
      const inChild = await client.runInTask(() => client.getLock('fork').tryLock());
      expect(inChild).toBe(false);
      await client.getLock('fork').unlock();
    });
  });

  test('two clients never share an owner even with the same task', async () => {
    const a = redis.client();
    const b = redis.client();
    await a.runInTask(async () => {
      await a.getLock('clients').lock();
      expect(await b.getLock('clients').tryLock()).toBe(false);
      await a.getLock('clients').unlock();
    });
  });

  test('withLock outside a task acts for the handle, and its callback is a task of that owner', async () => {
    const client = redis.client();
    const lock = client.getLock('own');
    await lock.withLock(async () => {
      expect(await lock.getHoldCount()).toBe(1);
      expect(await client.getLock('own').isHeldByCurrentTask()).toBe(true);
    });
    expect(await lock.getHoldCount()).toBe(0);
  });

  test('withLock returns the callback value and releases when it throws', async () => {
    const client = redis.client();
    const lock = client.getLock('result');
    expect(await lock.withLock(() => 42)).toBe(42);
    await expect(
      lock.withLock(() => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await lock.isLocked()).toBe(false);
  });
});

describe('explicit owners', () => {
  const redis = useRedis();

  test('a lock taken by one worker process is released by another acting as the same owner id', async () => {
    const port = String(redis.port());
    const holder = startWorker([port, 'hold', 'job-lock'], { OWNER_ID: 'orders:job-42' });
    try {
      expect(await holder.firstMessage).toBe('locked');
      expect(await holdCounts(redis.admin(), 'job-lock')).toEqual({ 'orders:job-42': '1' });
      const releaser = startWorker([port, 'unlock', 'job-lock'], { OWNER_ID: 'orders:job-42' });
      expect(await releaser.firstMessage).toBe('unlocked');
      expect(await redis.admin().exists('job-lock')).toBe(0);
    } finally {
      holder.child.kill('SIGKILL');
    }
  }, 30_000);

  test('a task acting as the owner of a dead worker keeps its lock alive, then releases it', async () => {
    const holder = startWorker([String(redis.port()), 'hold', 'job-renew'], {
      OWNER_ID: 'orders:job-7',
      WATCHDOG_TIMEOUT: '1000',
    });
    expect(await holder.firstMessage).toBe('locked');
    holder.child.kill('SIGKILL');
    const client = redis.client({ watchdogTimeout: 1_000 });
    const lock = client.getLock('job-renew');
    await client.runInTask(() => lock.lock(), { ownerId: 'orders:job-7' });
    expect(await redis.admin().hget('job-renew', 'orders:job-7')).toBe('2');
    // Three leases later this client's watchdog still keeps it.
    await sleep(3_000);
    expect(await redis.admin().hget('job-renew', 'orders:job-7')).toBe('2');
    await client.runInTask(
      async () => {
        await lock.unlock();
        await lock.unlock();
      },
      { ownerId: 'orders:job-7' },
    );
    expect(await redis.admin().exists('job-renew')).toBe(0);
  }, 30_000);

  test('two tasks acting as one explicit owner id in one process re-enter each other', async () => {
    const client = redis.client();
    const lock = client.getLock('same-explicit');
    await client.runInTask(() => lock.lock(), { ownerId: 'jobs:same' });
    const again = await client.runInTask(() => lock.tryLock(1_000), { ownerId: 'jobs:same' });
    expect(again).toBe(true);
    expect(await redis.admin().hget('same-explicit', 'jobs:same')).toBe('2');
    await client.runInTask(() => lock.withLock(() => undefined, { waitTime: 1_000 }), {
      ownerId: 'jobs:same',
    });
    await client.runInTask(
      async () => {
        await lock.unlock();
        await lock.unlock();
      },
      { ownerId: 'jobs:same' },
    );
    expect(await redis.admin().exists('same-explicit')).toBe(0);
  });

  test('ownerId is checked', async () => {
    const client = redis.client();
    // Rejected, never thrown: runInTask answers bad input as withLock does.
    await expect(client.runInTask(() => 1, { ownerId: '' })).rejects.toThrow(
      /^ownerId must be a non-empty string/,
    );
    await expect(client.runInTask(() => 1, { ownerId: 'a\nb' })).rejects.toThrow(/control characters/);
    await expect(client.runInTask(() => 1, { ownerId: 'x'.repeat(600) })).rejects.toThrow(RangeError);
    await expect(client.runInTask(() => 1, { ownerId: 'rlock_mark:a:1' })).rejects.toThrow(/mark holds/);
    await expect(client.runInTask(() => 1, { ownerId: 'mode' })).rejects.toThrow(/must not be "mode"/);
    await expect(client.runInTask(() => 1, { owner: 'x' } as never)).rejects.toThrow(/no option "owner"/);
    expect(await client.runInTask(() => 'fine', { ownerId: 'orders:job-1' })).toBe('fine');
  });
});

describe('owner ids in Redis', () => {
  const redis = useRedis();

  test('two processes configured with the same clientId never hold one lock together', async () => {
    const port = String(redis.port());
    const workers = [1, 2].map(() =>
      startWorker([port, 'loop', 'same-client-id', '1500'], { CLIENT_ID: 'order-service' }),
    );
    expect(await Promise.all(workers.map((worker) => worker.firstMessage))).toEqual(['done', 'done']);
    const grants = await redis.admin().lrange('same-client-id:grants', 0, -1);
    const clients = new Set(grants.map((owner) => owner.slice(0, owner.lastIndexOf(':'))));
    expect(grants.length).toBeGreaterThan(20);
    expect(clients.size).toBe(2);
    for (const client of clients) expect(client).toMatch(/^order-service\/[0-9a-f]{16}$/);
    expect(await redis.admin().get('same-client-id:overlaps')).toBeNull();
  }, 30_000);

  test('an owner id leads to the host and process that hold the lock', async () => {
    const holder = startWorker([String(redis.port()), 'hold', 'traced'], { CLIENT_ID: 'billing' });
    try {
      expect(await holder.firstMessage).toBe('locked');
      const [owner] = (await holderIds(redis.admin(), 'traced')) as [string];
      const clientId = owner.slice(0, owner.lastIndexOf(':'));
      // Written beside the first acquisition, not before it: on a cluster it may land a moment later.
      await eventually(
        'the client entry',
        async () => (await redis.admin().exists(`rlock_client:{${clientId}}`)) === 1,
      );
      const entry = await redis.admin().hgetall(`rlock_client:{${clientId}}`);
      expect(entry).toMatchObject({ host: hostname(), pid: String(holder.child.pid), label: 'billing' });
      expect(await redis.admin().pttl(`rlock_client:{${clientId}}`)).toBeGreaterThan(0);
    } finally {
      holder.child.kill('SIGKILL');
    }
  }, 30_000);

  test('close() removes the client entry', async () => {
    const client = redis.client();
    await client.getLock('entry').withLock(() => undefined);
    await eventually(
      'announced',
      async () => (await redis.admin().exists(`rlock_client:{${client.id}}`)) === 1,
    );
    await client.close();
    expect(await redis.admin().exists(`rlock_client:{${client.id}}`)).toBe(0);
  });
});

describe('ioredis keyPrefix', () => {
  const redis = useRedis();

  const kinds: Array<[string, (client: LockClient) => RLock]> = [
    ['getLock', (client) => client.getLock('prefixed')],
    ['getFairLock', (client) => client.getFairLock('prefixed')],
    ['getFencedLock', (client) => client.getFencedLock('prefixed')],
  ];

  test.each(kinds)(
    '%s: every key is under the prefix and a waiter wakes on the release',
    async (_kind, lockOf) => {
      const holder = lockOf(redis.client({}, redis.connect({ keyPrefix: 'myapp:' })));
      const waiter = lockOf(redis.client({}, redis.connect({ keyPrefix: 'myapp:' })));
      await holder.lock();
      const waiting = waiter.tryLock(10_000);
      await sleep(300);
      const keys = (await redis.everyMaster((node) => node.keys('*'))).flat();
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(key).toMatch(/^myapp:/);
      expect(keys).toContain('myapp:prefixed');
      const releasedAt = performance.now();
      await holder.unlock();
      expect(await waiting).toBe(true);
      expect(performance.now() - releasedAt).toBeLessThan(500);
      // Unprefixed, the name is another lock.
      expect(await lockOf(redis.client()).tryLock()).toBe(true);
    },
  );

  test.each(kinds)(
    '%s: a script the server forgot is sent again as text with the prefix once, not twice',
    async (_kind, lockOf) => {
      const lock = lockOf(redis.client({}, redis.connect({ keyPrefix: 'myapp:' })));
      const flush = (): Promise<unknown> => redis.everyMaster((node) => node.script('FLUSH'));
      await flush();
      await lock.lock();
      await flush();
      await lock.lock();
      const keys = (await redis.everyMaster((node) => node.keys('*'))).flat();
      expect(keys).toContain('myapp:prefixed');
      for (const key of keys) expect(key).not.toMatch(/^myapp:myapp:/);
      expect(await lock.getHoldCount()).toBe(2);
      await flush();
      await lock.unlock();
      await flush();
      await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
      // What is left (the client's entry, the latch of the inner release) is under the prefix once.
      for (const key of (await redis.everyMaster((node) => node.keys('*'))).flat()) {
        expect(key).toMatch(/^myapp:(?!myapp:)/);
      }
    },
  );
});
