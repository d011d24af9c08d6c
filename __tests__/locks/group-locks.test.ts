import { LockClient, LockNotHeldError, type RLock } from '../../src';
import { FaultProxy } from '../helpers/proxy';
import { startRedis, type RedisServer } from '../helpers/redis-server';
import { eventually, sleep } from '../helpers/wait';
import { startWorker } from '../helpers/workers';

// MultiLock and RedLock over three independent redis-servers, each with its own client.
describe('MultiLock and RedLock on independent masters', () => {
  let servers: RedisServer[] = [];
  let clients: LockClient[] = [];
  let others: LockClient[] = [];

  beforeAll(async () => {
    servers = await Promise.all([startRedis(), startRedis(), startRedis()]);
  });
  beforeEach(() => {
    clients = servers.map((server) => new LockClient(server.connect(), { watchdogTimeout: 1_500 }));
    others = servers.map((server) => new LockClient(server.connect()));
  });
  afterEach(async () => {
    await Promise.all([...clients, ...others].map((client) => client.close()));
    await Promise.all(servers.map((server) => server.connect().flushall()));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  const members = (name: string, from = clients) => from.map((client) => client.getLock(name));

  test('MultiLock takes every member or none', async () => {
    const multi = clients[0]!.getMultiLock(...members('m-all'));
    expect(await multi.tryLock()).toBe(true);
    expect(await Promise.all(members('m-all').map((m) => m.isLocked()))).toEqual([true, true, true]);
    expect(await multi.isHeldByCurrentTask()).toBe(true);
    await multi.unlock();
    expect(await multi.isLocked()).toBe(false);

    await others[2]!.getLock('m-all').lock();
    const started = performance.now();
    expect(await multi.tryLock(300)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(performance.now() - started).toBeLessThan(1_500);
    // Nothing partial is left behind on the free members. A member whose answer came after the
    // round was decided (a busy machine) is given back as soon as it arrives, not before the call
    // returns: look until then.
    await eventually('the free members given back', async () => {
      const locked = await Promise.all([0, 1].map((i) => clients[i]!.getLock('m-all').isLocked()));
      return locked.every((held) => !held);
    });
  });

  test('MultiLock applies the lease asked to every member, even after waiting', async () => {
    const blocker = others[1]!.getLock('m-lease');
    await blocker.lock(200);
    const multi = clients[0]!.getMultiLock(...members('m-lease'));
    expect(await multi.tryLock(2_000, 1_000)).toBe(true);
    for (const member of members('m-lease')) {
      const ttl = await member.remainTimeToLive();
      expect(ttl).toBeGreaterThan(500);
      expect(ttl).toBeLessThanOrEqual(1_000);
    }
  });

  test('two MultiLocks over the same locks in opposite orders do not deadlock', async () => {
    const [a, b] = [clients[0]!, clients[1]!];
    const forward = a.getMultiLock(a.getLock('m-x'), b.getLock('m-y'));
    const backward = a.getMultiLock(b.getLock('m-y'), a.getLock('m-x'));
    let inside = 0;
    let overlaps = 0;
    const run = async (multi: typeof forward): Promise<void> => {
      for (let i = 0; i < 5; i += 1) {
        await multi.withLock(async () => {
          inside += 1;
          if (inside > 1) overlaps += 1;
          await sleep(5);
          inside -= 1;
        });
      }
    };
    await Promise.all([run(forward), run(backward)]);
    expect(overlaps).toBe(0);
  }, 30_000);

  test('MultiLock withLock: the signal aborts when a member lease is lost', async () => {
    const multi = clients[0]!.getMultiLock(...members('m-lost'));
    const run = multi.withLock(async ({ signal }) => {
      await servers[1]!.connect().del('m-lost');
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      return 'told';
    });
    await expect(run).rejects.toBeInstanceOf(LockNotHeldError);
  });

  test('a fixed lease that runs out is a loss only where someone watches it, as for a single lock', async () => {
    const lost: string[] = [];
    clients[0]!.on('lockLost', ({ name, code }) => lost.push(`${name}: ${code}`));
    // Taken by hand, lock(leaseTime) ends when its lease does: what the caller asked for.
    const byHand = clients[0]!.getRedLock(...members('r-expire'));
    const single = clients[0]!.getLock('r-expire-single');
    await byHand.lock(300);
    await single.lock(300);
    await sleep(800);
    expect(lost).toEqual([]);
    // A withLock body that outlives its lease is told, by its signal and the event.
    const watched = clients[0]!.getRedLock(...members('r-expire-body'));
    let signalReason: unknown;
    const run = watched.withLock(
      ({ signal }) =>
        new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => {
            signalReason = signal.reason;
            resolve();
          }),
        ),
      { leaseTime: 300 },
    );
    // Its release then finds nothing to release, as a single lock's does.
    await expect(run).rejects.toBeInstanceOf(LockNotHeldError);
    expect(signalReason).toMatchObject({ code: 'ERR_LOCK_LOST', lostCode: 'quorum-lost' });
    expect(lost).toEqual([`${watched.name}: quorum-lost`]);
  });

  test('a RedLock that lost its quorum is not held, though one member is still in Redis', async () => {
    const red = clients[0]!.getRedLock(...members('r-straggler'));
    let signalReason: unknown;
    const run = red.withLock(async ({ signal }) => {
      // Two of three masters lose the lock; the third still holds it when the body ends.
      await servers[0]!.connect().del('r-straggler');
      await servers[1]!.connect().del('r-straggler');
      await new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          signalReason = signal.reason;
          resolve();
        }),
      );
      expect(await servers[2]!.connect().exists('r-straggler')).toBe(1);
    });
    await expect(run).rejects.toBeInstanceOf(LockNotHeldError);
    expect(signalReason).toMatchObject({ lostCode: 'quorum-lost' });
    // What was left over is given back all the same.
    expect(await servers[2]!.connect().exists('r-straggler')).toBe(0);
  });

  test('RedLock: acquirable with one of three masters down', async () => {
    const down = await startRedis();
    const downClient = new LockClient(
      down.connect({ enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null }),
    );
    await down.stop();
    try {
      const red = clients[0]!.getRedLock(
        clients[0]!.getLock('r-down'),
        clients[1]!.getLock('r-down'),
        downClient.getLock('r-down'),
      );
      expect(await red.tryLock(1_000, 5_000)).toBe(true);
      // Two of three members answer that they are held: a quorum; the down one counts as not held.
      expect(await red.isHeldByCurrentTask()).toBe(true);
    } finally {
      await downClient.close();
    }
  });

  test('RedLock: not acquirable while two of three masters are held elsewhere, and leaves nothing', async () => {
    await others[0]!.getLock('r-held').lock();
    await others[1]!.getLock('r-held').lock();
    const red = clients[0]!.getRedLock(...members('r-held'));
    expect(await red.tryLock(300)).toBe(false);
    // A member called off just as it was granted gives the grant back as its answer arrives.
    await eventually('nothing left', async () => !(await clients[2]!.getLock('r-held').isLocked()), 1_000);
  });

  test('RedLock: held with a majority, released from every member', async () => {
    await others[2]!.getLock('r-major').lock();
    const red = clients[0]!.getRedLock(...members('r-major'));
    expect(await red.tryLock(500, 5_000)).toBe(true);
    expect(await red.isHeldByCurrentTask()).toBe(true);
    expect(await red.getHoldCount()).toBe(1);
    await red.unlock();
    // It answers once no quorum can be held; the last member's release may still be on its way.
    await eventually('every member free', async () => {
      const locked = await Promise.all([0, 1].map((i) => clients[i]!.getLock('r-major').isLocked()));
      return !locked.includes(true);
    });
    await expect(red.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
  });

  test('RedLock: four competing owners over three masters never deadlock nor overlap', async () => {
    let inside = 0;
    let overlaps = 0;
    let rounds = 0;
    await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        clients[i % 3]!.runInTask(async () => {
          const red = clients[0]!.getRedLock(...members('r-contended'));
          for (let j = 0; j < 5; j += 1) {
            await red.withLock(async () => {
              inside += 1;
              if (inside > 1) overlaps += 1;
              await sleep(5);
              inside -= 1;
              rounds += 1;
            });
          }
        }),
      ),
    );
    expect(rounds).toBe(20);
    expect(overlaps).toBe(0);
  }, 30_000);

  test('RedLock: a quorum reached with no validity left (lease shorter than drift) is given back', async () => {
    const red = clients[0]!.getRedLock(...members('r-valid'));
    expect(await red.tryLock(0, 2)).toBe(false);
    // The members it took are released before it answers; a member still being asked when the
    // quorum was reached is called off, and gives its late grant back in the background (or its
    // 2 ms lease ends).
    for (const client of clients) {
      await eventually('given back', async () => !(await client.getLock('r-valid').isLocked()), 500);
    }
  });

  /** Ways to take a group with a fixed lease, each with its release; all of them shorten the members' lease. */
  type LeaseWay = 'lock(lease)' | 'tryLock(wait, lease)' | 'withLock({ leaseTime })' | 'hold({ leaseTime })';
  const LEASE = 1_500;
  const takeWithLease = async (
    group: RLock,
    way: LeaseWay,
    whileHeld: () => Promise<void>,
  ): Promise<void> => {
    if (way === 'withLock({ leaseTime })') return group.withLock(whileHeld, { leaseTime: LEASE });
    if (way === 'hold({ leaseTime })') {
      const hold = await group.hold({ leaseTime: LEASE });
      await whileHeld();
      return hold.release();
    }
    // A wait longer than half the lease: members first take a lease of twice the wait.
    if (way === 'lock(lease)') await group.lock(LEASE);
    else expect(await group.tryLock(1_000, LEASE)).toBe(true);
    await whileHeld();
    await group.unlock();
  };
  /** Members over the three masters, on one client, or of other kinds. */
  type Layout = 'one client per master' | 'one client' | 'fair members' | 'mixed kinds';
  const membersIn = (layout: Layout, name: string): RLock[] => {
    if (layout === 'one client') return [0, 1, 2].map((i) => clients[0]!.getLock(`${name}:${i}`));
    if (layout === 'fair members') return clients.map((client) => client.getFairLock(name));
    if (layout === 'mixed kinds') {
      return [
        clients[0]!.getFairLock(name),
        clients[1]!.getLock(name),
        clients[2]!.getReadWriteLock(name).writeLock(),
      ];
    }
    return members(name);
  };

  describe.each<'multi' | 'red'>(['multi', 'red'])('%s lock with a fixed lease', (kind) => {
    test.each<[LeaseWay, Layout]>(
      (
        ['lock(lease)', 'tryLock(wait, lease)', 'withLock({ leaseTime })', 'hold({ leaseTime })'] as const
      ).flatMap((way) =>
        (['one client per master', 'one client', 'fair members', 'mixed kinds'] as const).map(
          (layout): [LeaseWay, Layout] => [way, layout],
        ),
      ),
    )('%s, %s: every member gets the lease, and the release lets every one go', async (way, layout) => {
      const name = `${kind}-lease-${way}-${layout}`;
      const parts = membersIn(layout, name);
      const group = kind === 'multi' ? clients[0]!.getMultiLock(...parts) : clients[0]!.getRedLock(...parts);
      let held = 0;
      await takeWithLease(group, way, async () => {
        for (const member of parts) {
          // A RedLock member that answered after the quorum was held joins the hold, and is cut
          // to the lease a moment later.
          await eventually('cut to the lease', async () => (await member.remainTimeToLive()) <= LEASE, 500);
          if ((await member.remainTimeToLive()) > 0) held += 1;
        }
        expect(await group.isHeldByCurrentTask()).toBe(true);
      });
      expect(held).toBeGreaterThanOrEqual(kind === 'multi' ? 3 : 2);
      // A RedLock answers once no quorum can be held; the last member's release may still be out.
      await eventually('every member free', async () => {
        const locked = await Promise.all(parts.map((member) => member.isLocked()));
        return !locked.includes(true);
      });
      await expect(group.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    });
  });

  test('a group with a fixed lease does not cut the lease of a member its owner held before', async () => {
    const parts = members('m-outer');
    const outer = parts[0]!;
    await outer.lock(20_000);
    const multi = clients[0]!.getMultiLock(...parts);
    await multi.lock(LEASE);
    expect(await outer.remainTimeToLive()).toBeGreaterThan(15_000);
    await multi.unlock();
    // The outer hold is the owner's still, with its lease.
    expect(await outer.isHeldByCurrentTask()).toBe(true);
    expect(await outer.getHoldCount()).toBe(1);
    expect(await outer.remainTimeToLive()).toBeGreaterThan(15_000);
    await outer.unlock();
    expect(await parts[1]!.isLocked()).toBe(false);
  });

  type LateWay = 'lock()' | 'lock(1500)' | 'tryLock(1000, 10000)' | 'withLock()' | 'unlock at once';
  test.each<[LateWay, 'getLock' | 'getFairLock']>([
    ...(['lock()', 'lock(1500)', 'tryLock(1000, 10000)', 'withLock()', 'unlock at once'] as const).map(
      (how): [LateWay, 'getLock'] => [how, 'getLock'],
    ),
    ...(['lock()', 'lock(1500)', 'unlock at once'] as const).map((how): [LateWay, 'getFairLock'] => [
      how,
      'getFairLock',
    ]),
  ])(
    'RedLock %s of %s members: a master that answers after the quorum was held joins the hold, or is given back',
    async (how, factory) => {
      // The third master answers 100 ms after the others: the quorum is reached without it.
      const proxy = await new FaultProxy(servers[2]!.port).start();
      const lateRedis = servers[2]!.connect({ port: proxy.port });
      const late = new LockClient(lateRedis, { watchdogTimeout: 1_500 });
      const lateMaster = servers[2]!.connect();
      try {
        await late.getLock('warm').withLock(() => undefined);
        proxy.delayReplies(100);
        const parts = [clients[0]!, clients[1]!, late].map((client) => client[factory]('r-late'));
        const red = clients[0]!.getRedLock(...parts);
        const lateMasterHolds = async (): Promise<void> => {
          await eventually(
            'the late master holds it too',
            async () => (await lateMaster.exists('r-late')) === 1,
          );
          if (how === 'lock(1500)') {
            // Then cut to what is left of the group's lease, as the others were.
            return eventually('the late member cut to the lease', async () => {
              const ttl = await lateMaster.pttl('r-late');
              return ttl > 0 && ttl <= 1_500;
            });
          }
          // And keeps it (a grant that was called off would be given back as it arrives): renewed
          // with the others over more than a watchdog lease of 1.5 s, or kept for its lease.
          await sleep(how === 'tryLock(1000, 10000)' ? 300 : 2_000);
          expect(await lateMaster.pttl('r-late')).toBeGreaterThan(0);
        };
        if (how === 'withLock()') await red.withLock(lateMasterHolds);
        else if (how === 'unlock at once') {
          // Released before the late master answered: what it grants then is given back.
          await red.lock();
          await red.unlock();
          await sleep(300);
        } else {
          if (how === 'lock()') await red.lock();
          else if (how === 'lock(1500)') await red.lock(1_500);
          else expect(await red.tryLock(1_000, 10_000)).toBe(true);
          await lateMasterHolds();
          await red.unlock();
        }
        // Released from every master at once (not left for its lease to end).
        await eventually(
          'every member free',
          async () => {
            const held = await Promise.all(servers.map((server) => server.connect().exists('r-late')));
            return held.every((exists) => exists === 0);
          },
          500,
        );
      } finally {
        await late.close();
        lateRedis.disconnect();
        await proxy.stop();
      }
    },
    15_000,
  );

  // Redisson's RedissonRedLockTest.testLockLeasetime: a 7-member RedLock over two servers (two
  // members on the first, five on the second), tasks that each increment a shared counter with
  // lock(2 s) ... unlock().
  // (The same members as __tests__/workers/group-worker.ts takes.)
  const sevenMembers = (from: LockClient[], name: string): RLock[] => [
    ...[1, 2].map((i) => from[0]!.getLock(`${name}:lock${i}`)),
    ...[3, 4, 5, 6, 7].map((i) => from[1]!.getLock(`${name}:lock${i}`)),
  ];

  test('a 7-member RedLock over two servers with lock(2000): 5 tasks x 3 increments, every unlock succeeds', async () => {
    const red = clients[0]!.getRedLock(...sevenMembers(clients, 'lease'));
    const counter = servers[0]!.connect();
    let inside = 0;
    let overlaps = 0;
    const failures: unknown[] = [];
    await Promise.all(
      Array.from({ length: 5 }, () =>
        clients[0]!.runInTask(async () => {
          for (let j = 0; j < 3; j += 1) {
            await red.lock(2_000);
            inside += 1;
            if (inside > 1) overlaps += 1;
            const value = Number((await counter.get('lease-counter')) ?? 0);
            await sleep(50);
            await counter.set('lease-counter', value + 1);
            inside -= 1;
            await red.unlock().catch((error: unknown) => failures.push(error));
          }
        }),
      ),
    );
    expect(failures).toEqual([]);
    expect(overlaps).toBe(0);
    expect(await counter.get('lease-counter')).toBe('15');
  }, 60_000);

  test('the same 7-member RedLock from two processes: 3 + 2 tasks x 3 increments, every unlock succeeds', async () => {
    const ports = [servers[0]!.port, servers[1]!.port].map(String);
    const workers = [3, 2].map((tasks) =>
      startWorker([...ports, 'lease-procs', String(tasks), '3', '2000'], {}, 'group-worker'),
    );
    expect(await Promise.all(workers.map((worker) => worker.firstMessage))).toEqual(['done', 'done']);
    const admin = servers[0]!.connect();
    expect(await admin.get('lease-procs:counter')).toBe('15');
    expect(await admin.get('lease-procs:overlaps')).toBeNull();
    expect(
      await Promise.all(sevenMembers(clients, 'lease-procs').map((member) => member.isLocked())),
    ).not.toContain(true);
  }, 60_000);
});
