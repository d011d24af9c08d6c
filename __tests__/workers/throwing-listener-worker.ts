/**
 * A LockClient whose 'acquired' listener throws, for the events test. argv: <redisPort>.
 * Prints one JSON line: what tryLock answered, whether the lock is held, and the uncaught errors.
 */
import { LockClient } from '../../src';
import { connectTo } from '../helpers/deployment';

const [port] = process.argv.slice(2);
const uncaught: string[] = [];
process.on('uncaughtException', (error) => uncaught.push(error.message));

async function main(): Promise<void> {
  const redis = connectTo(Number(port));
  const client = new LockClient(redis);
  client.on('acquired', () => {
    throw new Error('listener bug');
  });
  const lock = client.getLock('listener-throws');
  const acquired = await lock.tryLock();
  const held = await lock.isHeldByCurrentTask();
  await lock.unlock();
  await new Promise((resolve) => setTimeout(resolve, 50));
  await client.close();
  redis.disconnect();
  process.stdout.write(`${JSON.stringify({ acquired, held, uncaught })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`error: ${String(error)}\n`);
  process.exit(1);
});
