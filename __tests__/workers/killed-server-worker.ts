/**
 * Leaves nothing running, as a test file must: starts a redis-server with the test helpers,
 * connects, kills the server while the connection is up (ioredis goes on reconnecting), then
 * stops it, prints 'stopped' and returns. The process should end at once after that.
 */
import { startRedis } from '../helpers/redis-server';

async function main(): Promise<void> {
  const server = await startRedis();
  const connection = server.connect();
  await connection.ping();
  await server.down();
  await new Promise((resolve) => setTimeout(resolve, 300));
  await server.stop();
  process.stdout.write('stopped\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`error: ${String(error)}\n`);
  process.exit(1);
});
