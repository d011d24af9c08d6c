import { LockClient, LockNotHeldError } from '../src';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { eventually, sleep } from './helpers/wait';

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
    // The members it took are released before it answers; a member whose attempt was called off
    // as the quorum was reached gives its late grant back in the background (or its 2 ms lease ends).
    for (const client of clients) {
      await eventually('given back', async () => !(await client.getLock('r-valid').isLocked()), 500);
    }
  });
});
