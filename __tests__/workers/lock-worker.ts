/**
 * A competing worker in its own process, with its own connections, as in production.
 * argv: <redisPort> <mode> <lockName> [iterations]
 *   counter  increments a non-atomic counter in Redis inside withLock, `iterations` times
 *   hold     takes the lock with the watchdog, reports 'locked', then waits to be killed
 */
import Redis from 'ioredis';
import { LockClient } from '../../src';

const [port, mode, name, iterations = '0'] = process.argv.slice(2);

async function main(): Promise<void> {
  const redis = new Redis({ port: Number(port), host: '127.0.0.1' });
  const client = new LockClient(redis, { watchdogTimeout: Number(process.env.WATCHDOG_TIMEOUT ?? 30_000) });
  const lock = client.getLock(name as string);
  if (mode === 'counter') {
    for (let i = 0; i < Number(iterations); i += 1) {
      await lock.withLock(async () => {
        if ((await redis.incr(`${name}:inside`)) > 1) await redis.incr(`${name}:overlaps`);
        const value = Number((await redis.get(`${name}:counter`)) ?? 0);
        await new Promise((resolve) => setImmediate(resolve));
        await redis.set(`${name}:counter`, value + 1);
        await redis.decr(`${name}:inside`);
      });
    }
    await client.close();
    redis.disconnect();
    process.send?.('done');
  } else if (mode === 'hold') {
    await lock.lock();
    process.send?.('locked');
    setInterval(() => undefined, 1_000);
  }
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exit(1);
});
