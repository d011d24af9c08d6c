/**
 * Reports which RESP version its ioredis speaks (CLIENT INFO `resp=`), and the ioredis package it
 * resolved: for the test that the ioredis-6 project runs worker processes on ioredis 6 too.
 * argv: <redisPort>.
 */
import Redis from 'ioredis';

async function main(): Promise<void> {
  const redis = new Redis({ port: Number(process.argv[2]), host: '127.0.0.1' });
  const info = String(await redis.client('INFO'));
  redis.disconnect();
  process.send?.(JSON.stringify({ resp: /\bresp=(\d)/.exec(info)?.[1], path: require.resolve('ioredis') }));
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exit(1);
});
