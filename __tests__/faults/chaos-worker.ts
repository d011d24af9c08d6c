/**
 * A chaos worker: takes the fenced lock again and again (watchdog lease 1 s), writes the store
 * through the token check inside, and records what it saw in Redis.
 * argv: <redisPort>
 */
import Redis from 'ioredis';
import { LockClient } from '../../src';

/**
 * The store: accepts a write only with a token above every one seen. A refused write is a holder
 * that acted after a newer holder had: fencing caught an overlap. It also tracks the longest gap
 * between accepted writes (the longest stall), by server time.
 */
const STORE_WRITE = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) <= last then
  redis.call('hincrby', KEYS[1], ARGV[2] == '1' and 'refusedAfterPause' or 'refusedUnpaused', 1)
  return 0
end
local at = tonumber(redis.call('hget', KEYS[1], 'at') or '0')
if at > 0 and now - at > tonumber(redis.call('hget', KEYS[1], 'longestStall') or '0') then
  redis.call('hset', KEYS[1], 'longestStall', now - at)
end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'at', now)
redis.call('hincrby', KEYS[1], 'writes', 1)
return 1`;

const LEASE_MS = 1_000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const redis = new Redis({ port: Number(process.argv[2]), host: '127.0.0.1' });
  redis.on('error', () => undefined);
  const client = new LockClient(redis, { watchdogTimeout: LEASE_MS });
  // Lets the injector find which process holds the lock (the owner id starts with the client id).
  await redis.hset('chaos:pids', client.id, process.pid);
  client.on(
    'lockLost',
    () => void redis.hincrby('chaos:store', 'lostLeaseSignals', 1).catch(() => undefined),
  );
  for (;;) {
    try {
      await client.getFencedLock('chaos').withLock(
        async ({ token }) => {
          const started = performance.now();
          await sleep(5);
          // Stopped longer than the lease while holding: its lease may have gone meanwhile.
          const paused = performance.now() - started > LEASE_MS ? '1' : '0';
          await redis.eval(STORE_WRITE, 1, 'chaos:store', String(token), paused);
        },
        { waitTime: 10_000 },
      );
      await redis.hincrby('chaos:store', 'acquisitions', 1);
    } catch {
      await redis.hincrby('chaos:store', 'errors', 1).catch(() => undefined);
    }
    await sleep(1);
  }
}

void main();
