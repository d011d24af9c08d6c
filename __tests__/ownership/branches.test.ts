import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LockTimeoutError, type LockClient, type RLock } from '../../src';
import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

/**
 * Re-entry is nesting, not concurrency: branches running side by side inside one task are one
 * owner in Redis, but never inside the same lock at the same time.
 */

/** Counts how many run inside at once; the most seen is the figure a test checks. */
function occupancy(): { enter(): void; leave(): void; readonly most: number; readonly entries: number } {
  let inside = 0;
  let most = 0;
  let entries = 0;
  return {
    enter() {
      inside += 1;
      entries += 1;
      most = Math.max(most, inside);
    },
    leave() {
      inside -= 1;
    },
    get most() {
      return most;
    },
    get entries() {
      return entries;
    },
  };
}

const kinds: Array<[string, (client: LockClient, name: string) => RLock]> = [
  ['getLock', (client, name) => client.getLock(name)],
  ['getFairLock', (client, name) => client.getFairLock(name)],
  ['getFencedLock', (client, name) => client.getFencedLock(name)],
];

describe.each(kinds)('branches of one task (%s)', (_kind, lockOf) => {
  const redis = useRedis();

  test('Promise.all of nested withLock calls inside withLock run one at a time, each re-entering', async () => {
    const client = redis.client();
    const seen = occupancy();
    const holdCounts: number[] = [];
    await lockOf(client, 'branches').withLock(async () => {
      await Promise.all(
        [1, 2, 3].map(() =>
          lockOf(client, 'branches').withLock(async () => {
            seen.enter();
            holdCounts.push(await lockOf(client, 'branches').getHoldCount());
            await sleep(30);
            seen.leave();
          }),
        ),
      );
    });
    expect(seen.entries).toBe(3);
    expect(seen.most).toBe(1);
    expect(holdCounts).toEqual([2, 2, 2]);
    expect(await lockOf(client, 'branches').isLocked()).toBe(false);
  });

  test('a call nested inside the branch that holds the lock re-enters at once', async () => {
    const client = redis.client();
    const counts: number[] = [];
    const started = performance.now();
    await client.runInTask(() =>
      Promise.all(
        [1, 2].map(() =>
          lockOf(client, 'nested-branch').withLock(async () => {
            await lockOf(client, 'nested-branch').withLock(async () => {
              // By hand, too: the branch's own frame.
              await lockOf(client, 'nested-branch').lock();
              counts.push(await lockOf(client, 'nested-branch').getHoldCount());
              await lockOf(client, 'nested-branch').unlock();
            });
          }),
        ),
      ),
    );
    expect(counts).toEqual([3, 3]);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  test('a branch waiting for its sibling keeps its waitTime and its signal', async () => {
    const client = redis.client();
    const outcomes = await client.runInTask(() =>
      Promise.allSettled([
        lockOf(client, 'sibling-wait').withLock(() => sleep(400)),
        sleep(50).then(() => lockOf(client, 'sibling-wait').withLock(() => 'second', { waitTime: 100 })),
        sleep(50).then(() => lockOf(client, 'sibling-wait').tryLock()),
        sleep(50).then(() =>
          lockOf(client, 'sibling-wait').withLock(() => 'aborted', { signal: AbortSignal.timeout(100) }),
        ),
      ]),
    );
    expect(outcomes[0]).toMatchObject({ status: 'fulfilled' });
    expect(outcomes[1]).toMatchObject({ status: 'rejected', reason: expect.any(LockTimeoutError) });
    expect(outcomes[2]).toMatchObject({ status: 'fulfilled', value: false });
    expect(outcomes[3]).toMatchObject({ status: 'rejected', reason: { name: 'TimeoutError' } });
    expect(await lockOf(client, 'sibling-wait').isLocked()).toBe(false);
  });

  test('a by-hand lock() from outside a running withLock body waits for the body', async () => {
    const client = redis.client();
    const order: string[] = [];
    await client.runInTask(() =>
      Promise.all([
        lockOf(client, 'by-hand-sibling').withLock(async () => {
          order.push('body in');
          await sleep(200);
          order.push('body out');
        }),
        sleep(50).then(async () => {
          const lock = lockOf(client, 'by-hand-sibling');
          await lock.lock();
          order.push('by hand in');
          await lock.unlock();
        }),
      ]),
    );
    expect(order).toEqual(['body in', 'body out', 'by hand in']);
  });
});

describe('holds of one owner in one process', () => {
  const redis = useRedis();

  test('a branch whose lease ran out keeps its siblings waiting until its body is done, and takes nothing from them', async () => {
    const client = redis.client();
    const other = redis.client();
    // Who is inside now: B must never share the lock (A was told its lease was lost).
    let bInside = false;
    let outsiderInside = false;
    let overlapsWithB = 0;
    const order: string[] = [];
    let running = true;
    // Another process keeps trying to get in.
    const outsider = (async () => {
      while (running) {
        const lock = other.getLock('stale');
        if (await lock.tryLock()) {
          outsiderInside = true;
          if (bInside) overlapsWithB += 1;
          await sleep(5);
          outsiderInside = false;
          await lock.unlock();
        }
        await sleep(5);
      }
    })();
    const outcomes = await client.runInTask(() =>
      Promise.allSettled([
        client.getLock('stale').withLock(
          async () => {
            order.push('A in');
            // A CPU-bound stretch past the lease: the lease is lost while the body runs.
            const until = performance.now() + 400;
            while (performance.now() < until);
            await sleep(200);
            order.push('A out');
          },
          { leaseTime: 200 },
        ),
        sleep(50).then(() =>
          client.getLock('stale').withLock(async () => {
            bInside = true;
            if (outsiderInside) overlapsWithB += 1;
            order.push('B in');
            await sleep(300);
            order.push('B out');
            bInside = false;
          }),
        ),
      ]),
    );
    running = false;
    await outsider;
    expect(order.indexOf('B in')).toBeGreaterThan(order.indexOf('A out'));
    expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: { code: 'ERR_LOCK_NOT_HELD' } });
    expect(outcomes[1]).toMatchObject({ status: 'fulfilled' });
    // Others may have taken the lock while A ran on without its lease (A was told); B never shared it.
    expect(overlapsWithB).toBe(0);
    expect(await redis.admin().exists('stale')).toBe(0);
  }, 20_000);

  test('unlock() by hand never takes the hold of a running withLock', async () => {
    const client = redis.client();
    const lock = client.getLock('mixed');
    await client.runInTask(async () => {
      await lock.lock();
      await lock.withLock(async () => {
        expect(await lock.getHoldCount()).toBe(2);
        // The Redisson finally-habit inside a withLock body: refused, the body keeps its lock.
        await expect(lock.unlock()).resolves.toBeUndefined(); // releases the by-hand hold
        await expect(lock.unlock()).rejects.toThrow(/belong to running withLock calls/);
        expect(await lock.getHoldCount()).toBe(1);
      });
    });
    expect(await redis.admin().exists('mixed')).toBe(0);
  });

  test('lock() by hand, then withLock through the same handle outside a task: it re-enters', async () => {
    const client = redis.client();
    const lock = client.getLock('hand-then-with');
    await lock.lock();
    const result = await lock.withLock(async () => lock.getHoldCount(), { waitTime: 1_000 });
    expect(result).toBe(2);
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
  });

  test('one handle shared by concurrent callers outside a task: withLock bodies take turns', async () => {
    const client = redis.client();
    const shared = client.getLock('shared-handle');
    const seen = occupancy();
    await Promise.all(
      Array.from({ length: 10 }, () =>
        shared.withLock(async () => {
          seen.enter();
          await sleep(5);
          seen.leave();
        }),
      ),
    );
    expect(seen.most).toBe(1);
  });
});

describe('servers and timers started inside a task', () => {
  const redis = useRedis();

  async function serve(handler: () => Promise<void>): Promise<Server> {
    const server = createServer((req, res) => {
      handler().then(
        () => res.end('ok'),
        (error: unknown) => res.writeHead(500).end(String(error)),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return server;
  }

  function get(server: Server): Promise<string> {
    const { port } = server.address() as AddressInfo;
    return new Promise((resolve, reject) => {
      request({ port, host: '127.0.0.1', agent: false }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve(body));
      })
        .on('error', reject)
        .end();
    });
  }

  test('a server started inside runInTask: concurrent requests using withLock exclude each other', async () => {
    const client = redis.client();
    const seen = occupancy();
    const server = await client.runInTask(() =>
      serve(() =>
        client.getLock('per-request').withLock(async () => {
          seen.enter();
          await sleep(5);
          seen.leave();
        }),
      ),
    );
    try {
      const bodies = await Promise.all(Array.from({ length: 20 }, () => get(server)));
      expect(bodies).toEqual(Array(20).fill('ok'));
    } finally {
      server.close();
    }
    expect(seen.entries).toBe(20);
    expect(seen.most).toBe(1);
  });

  test('a server started inside a leader-election withLock: its requests still exclude each other', async () => {
    const client = redis.client();
    const seen = occupancy();
    let server: Server | undefined;
    let stop!: () => void;
    const leading = client.getLock('leader').withLock(async () => {
      server = await serve(() =>
        client.getLock('per-request-2').withLock(async () => {
          seen.enter();
          await sleep(5);
          seen.leave();
        }),
      );
      await new Promise<void>((resolve) => (stop = resolve));
    });
    while (!server) await sleep(10);
    try {
      await Promise.all(Array.from({ length: 20 }, () => get(server as Server)));
    } finally {
      server.close();
      stop();
      await leading;
    }
    expect(seen.most).toBe(1);
  });

  test('timers started inside a task take the lock one at a time', async () => {
    const client = redis.client();
    const seen = occupancy();
    await client.runInTask(
      () =>
        new Promise<void>((resolve) => {
          let finished = 0;
          for (let i = 0; i < 10; i += 1) {
            setTimeout(() => {
              void client
                .getLock('timers')
                .withLock(async () => {
                  seen.enter();
                  await sleep(5);
                  seen.leave();
                })
                .then(() => {
                  finished += 1;
                  if (finished === 10) resolve();
                });
            }, i % 3);
          }
        }),
    );
    expect(seen.most).toBe(1);
  });
});
