/**
 * A competing worker in its own process, with its own connections, as in production.
 * argv: <redisPort> <mode> <lockName> [n]; env LOCK_KIND=fair uses getFairLock, WATCHDOG_TIMEOUT
 * and FAIR_LOCK_WAIT_TIMEOUT set the client options.
 *   counter  increments a non-atomic counter in Redis inside withLock, n times, then reports 'done'
 *   hold     takes the lock, reports 'locked', then waits to be killed
 *   wait     reports 'started', takes the lock, appends n to <lockName>:order, releases, 'done'
 *   loop     for n ms: lock, append the owner id (as Redis has it) to <lockName>:grants, hold 2 ms,
 *            unlock; counts overlapping holds in <lockName>:overlaps; then reports 'done'
 *   fenced   takes the fenced lock in withLock with the watchdog, reports 'locked:<token>', then
 *            on the message 'write' writes <lockName>:store through the token check and reports
 *            'wrote:<1|0>:aborted:<true|false>'
 */
import { LockClient } from '../../src';
import { connectTo } from '../helpers/deployment';
import { FENCED_WRITE } from '../helpers/fenced-store';

const [port, mode, name = '', n = '0'] = process.argv.slice(2);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const redis = connectTo(Number(port));
  const client = new LockClient(redis, {
    watchdogTimeout: Number(process.env.WATCHDOG_TIMEOUT ?? 30_000),
    fairLockWaitTimeout: Number(process.env.FAIR_LOCK_WAIT_TIMEOUT ?? 10_000),
  });
  const getLock = (): ReturnType<LockClient['getLock']> =>
    process.env.LOCK_KIND === 'fair' ? client.getFairLock(name) : client.getLock(name);
  const finish = async (): Promise<void> => {
    await client.close();
    redis.disconnect();
    process.send?.('done');
  };

  /** Marks the holder in Redis and counts a second holder at once as an overlap. */
  const inside = async (work: () => Promise<void>): Promise<void> => {
    if ((await redis.incr(`${name}:inside`)) > 1) await redis.incr(`${name}:overlaps`);
    await work();
    await redis.decr(`${name}:inside`);
  };

  if (mode === 'counter') {
    for (let i = 0; i < Number(n); i += 1) {
      await getLock().withLock(() =>
        inside(async () => {
          const value = Number((await redis.get(`${name}:counter`)) ?? 0);
          await new Promise((resolve) => setImmediate(resolve));
          await redis.set(`${name}:counter`, value + 1);
        }),
      );
    }
    await finish();
  } else if (mode === 'hold') {
    await getLock().lock();
    process.send?.('locked');
    setInterval(() => undefined, 1_000);
  } else if (mode === 'wait') {
    process.send?.('started');
    const lock = getLock();
    await lock.lock();
    await redis.rpush(`${name}:order`, n);
    await lock.unlock();
    await finish();
  } else if (mode === 'fenced') {
    const written = new Promise<void>((resolveWrite) => {
      process.on('message', (message) => {
        if (message === 'write') resolveWrite();
      });
    });
    await client
      .getFencedLock(name)
      .withLock(async ({ signal, token }) => {
        process.send?.(`locked:${token}`);
        await written;
        const accepted = await redis.eval(
          FENCED_WRITE,
          1,
          `${name}:store`,
          String(token),
          'from the paused holder',
        );
        process.send?.(`wrote:${accepted}:aborted:${signal.aborted}`);
      })
      .catch(() => undefined);
    await finish();
  } else if (mode === 'loop') {
    const until = Date.now() + Number(n);
    while (Date.now() < until) {
      await getLock().withLock(() =>
        inside(async () => {
          const [owner] = await redis.hkeys(name);
          await redis.rpush(`${name}:grants`, owner ?? '?');
          await sleep(2);
        }),
      );
    }
    await finish();
  }
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exit(1);
});
