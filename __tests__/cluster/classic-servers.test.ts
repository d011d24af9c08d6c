import { LockClient } from '../../src';
import { startCluster, type RedisClusterServers } from '../helpers/redis-cluster';
import { expectWokenByRelease } from '../helpers/wake';

/**
 * A cluster whose servers have no sharded pub/sub (as before Redis 7; here the commands are
 * renamed away): with pubSub 'auto' rlock announces with classic PUBLISH, and waiters still wake.
 */
describe('a cluster without sharded pub/sub', () => {
  let cluster: RedisClusterServers;
  const clients: LockClient[] = [];

  beforeAll(async () => {
    const renamed = ['SPUBLISH', 'SSUBSCRIBE', 'SUNSUBSCRIBE'].flatMap((command) => [
      '--rename-command',
      command,
      '',
    ]);
    cluster = await startCluster({ serverArgs: renamed });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await cluster.stop();
  });

  test("pubSub 'auto' falls back to classic pub/sub, for getLock and getFairLock", async () => {
    const holder = new LockClient(cluster.connect());
    const waiter = new LockClient(cluster.connect());
    clients.push(holder, waiter);
    for (const kind of ['getLock', 'getFairLock'] as const) {
      for (const name of [`${kind}-a`, `${kind}-b`, `${kind}-c`]) {
        await expectWokenByRelease(holder, waiter, kind, name);
      }
    }
  });
});
