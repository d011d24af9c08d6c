/**
 * A process taking one RedLock of seven members over two servers (two members on the first, five
 * on the second: Redisson's RedissonRedLockTest layout), with its own two clients, as in production.
 * argv: <port1> <port2> <name> <tasks> <increments> <leaseTime>
 * Runs <tasks> tasks at once; each, <increments> times: red.lock(leaseTime), a non-atomic increment
 * of <name>:counter on the first server, red.unlock(). A second holder at once is counted in
 * <name>:overlaps. Reports 'done', or 'error: ...' for the first failure (an unlock that throws).
 */
import { LockClient } from '../../src';
import { connectTo } from '../helpers/deployment';

const [port1, port2, name = '', tasks = '1', increments = '1', leaseTime = '2000'] = process.argv.slice(2);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const connections = [connectTo(Number(port1)), connectTo(Number(port2))];
  const [first, second] = connections.map((redis) => new LockClient(redis)) as [LockClient, LockClient];
  const red = first.getRedLock(
    ...[1, 2].map((i) => first.getLock(`${name}:lock${i}`)),
    ...[3, 4, 5, 6, 7].map((i) => second.getLock(`${name}:lock${i}`)),
  );
  const store = connections[0]!;
  await Promise.all(
    Array.from({ length: Number(tasks) }, () =>
      first.runInTask(async () => {
        for (let j = 0; j < Number(increments); j += 1) {
          await red.lock(Number(leaseTime));
          if ((await store.incr(`${name}:inside`)) > 1) await store.incr(`${name}:overlaps`);
          const value = Number((await store.get(`${name}:counter`)) ?? 0);
          await sleep(50);
          await store.set(`${name}:counter`, value + 1);
          await store.decr(`${name}:inside`);
          await red.unlock();
        }
      }),
    ),
  );
  await Promise.all([first.close(), second.close()]);
  for (const redis of connections) redis.disconnect();
  process.send?.('done');
}

main().catch((error: unknown) => {
  process.send?.(`error: ${error instanceof Error ? error.message : String(error)}`);
  setTimeout(() => process.exit(1), 100);
});
