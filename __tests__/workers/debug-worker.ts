/**
 * Runs one contended acquisition and a watchdog renewal, for the NODE_DEBUG=rlock test.
 * argv: <redisPort>. Prints 'done' on stdout when finished; debug lines go to stderr.
 */
import { LockClient } from '../../src';
import { connectTo } from '../helpers/deployment';

const [port] = process.argv.slice(2);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const redis = connectTo(Number(port));
  const client = new LockClient(redis, { watchdogTimeout: 600 });
  const holder = client.getLock('debugged');
  await holder.lock();
  const waiter = client.getLock('debugged');
  const waiting = waiter.tryLock(5_000);
  // Past a third of the watchdog lease: one renewal.
  await sleep(450);
  await holder.unlock();
  if (!(await waiting)) throw new Error('the waiter did not acquire');
  await waiter.unlock();
  await client.close();
  redis.disconnect();
  process.stdout.write('done\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`error: ${String(error)}\n`);
  process.exit(1);
});
