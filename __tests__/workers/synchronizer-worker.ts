/**
 * A process using a semaphore or a count-down latch, with its own connections.
 * argv: <redisPort> <mode> <name> [n] [k]
 *   permits    n times: withPermits(1) around a 5 ms stay, counting in Redis how many are inside at
 *              once (<name>:inside) and every time more than k were (<name>:overflows); 'done'
 *   count-down counts the latch down once; 'done'
 *   await      reports 'started', waits for the latch to open, reports 'done'
 *   expirable  takes a permit of the permit-expirable semaphore with an n ms lease, reports
 *              'acquired', then waits to be killed
 */
import { LockClient } from '../../src';
import { connectTo } from '../helpers/deployment';

const [port, mode, name = '', n = '0', k = '1'] = process.argv.slice(2);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const redis = connectTo(Number(port));
  const client = new LockClient(redis);
  if (mode === 'permits') {
    const semaphore = client.getSemaphore(name);
    for (let i = 0; i < Number(n); i += 1) {
      await semaphore.withPermits(1, async () => {
        if ((await redis.incr(`${name}:inside`)) > Number(k)) await redis.incr(`${name}:overflows`);
        await sleep(5);
        await redis.decr(`${name}:inside`);
      });
    }
  } else if (mode === 'count-down') {
    await client.getCountDownLatch(name).countDown();
  } else if (mode === 'await') {
    process.send?.('started');
    await client.getCountDownLatch(name).await();
  } else if (mode === 'expirable') {
    await client.getPermitExpirableSemaphore(name).acquire({ leaseTime: Number(n) });
    process.send?.('acquired');
    await new Promise(() => undefined);
  }
  await client.close();
  redis.disconnect();
  process.send?.('done');
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exitCode = 1;
});
