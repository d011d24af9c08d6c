import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LockTimeoutError, type LockClient, type RLock } from '../src';
import { useRedis } from './helpers/setup';
import { sleep } from './helpers/wait';

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
