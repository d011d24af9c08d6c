/**
 * `npm run demo`: a readable timeline of rlock at work.
 * With REDIS_URL it uses that server; without, an embedded in-memory Redis (ioredis-mock).
 */
import Redis from 'ioredis';
import { LockClient, LockNotHeldError, type RLock } from '../index';
import type { RedisConnection } from '../redis/connection';

const started = performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function say(who: string, what: string): void {
  const at = ((performance.now() - started) / 1000).toFixed(3).padStart(7);
  console.log(`[${at}s] ${who.padEnd(10)} ${what}`);
}

function heading(title: string): void {
  console.log(`\n── ${title} ${'─'.repeat(Math.max(0, 70 - title.length))}`);
}

async function connect(): Promise<{
  redis: RedisConnection & { duplicate(): RedisConnection };
  where: string;
  done(): void;
}> {
  const url = process.env.REDIS_URL;
  if (url) {
    const redis = new Redis(url);
    return { redis, where: `Redis at ${url}`, done: () => redis.disconnect() };
  }
  // Loaded only here: the embedded server is for the demo, not a dependency of the library.
  const { default: RedisMock } = await import('ioredis-mock');
  const redis = new RedisMock() as unknown as Redis;
  return {
    redis,
    where: 'an embedded in-memory Redis (ioredis-mock); set REDIS_URL to use a real one',
    done: () => redis.disconnect(),
  };
}

async function contention(client: LockClient): Promise<void> {
  heading('1. three workers contend for one lock; each gets it in turn');
  const worker = async (who: string): Promise<void> => {
    say(who, 'wants orders:42');
    await client.getLock('orders:42').withLock(async () => {
      say(who, 'holds orders:42, working 300 ms');
      await sleep(300);
      say(who, 'releases orders:42');
    });
  };
  await Promise.all(['worker-1', 'worker-2', 'worker-3'].map(worker));
}

async function reentry(client: LockClient): Promise<void> {
  heading('2. nested locking in one async call chain re-enters');
  const reserveStock = async (): Promise<void> => {
    const lock = client.getLock('stock:sku-7');
    await lock.withLock(async () => {
      say('reserve', `re-entered stock:sku-7, hold count ${await lock.getHoldCount()}`);
    });
  };
  await client.getLock('stock:sku-7').withLock(async () => {
    say('checkout', `holds stock:sku-7, hold count ${await client.getLock('stock:sku-7').getHoldCount()}`);
    await reserveStock();
    say(
      'checkout',
      `back in the outer call, hold count ${await client.getLock('stock:sku-7').getHoldCount()}`,
    );
  });
}

async function watchdog(client: LockClient): Promise<void> {
  heading(`3. the watchdog keeps a long holder's lease (watchdogTimeout ${client.watchdogTimeout} ms)`);
  const lock = client.getLock('report:nightly');
  await lock.lock();
  say('reporter', `holds report:nightly without a leaseTime; ttl ${await lock.remainTimeToLive()} ms`);
  for (let i = 0; i < 4; i += 1) {
    await sleep(client.watchdogTimeout / 2);
    say(
      'reporter',
      `still working, ttl ${await lock.remainTimeToLive()} ms (renewed every ${client.watchdogTimeout / 3} ms)`,
    );
  }
  await lock.unlock();
  say('reporter', 'done, released');
}

async function leaseExpiry(client: LockClient): Promise<void> {
  heading('4. a fixed lease expires by itself; the late holder is told on unlock');
  const slow = client.getLock('payment:981');
  await slow.lock(800);
  say('slow', 'holds payment:981 with leaseTime 800 ms, then stalls for 1200 ms');
  const other = client.getLock('payment:981');
  const waited = performance.now();
  await other.lock(5_000);
  say('other', `got payment:981 after ${Math.round(performance.now() - waited)} ms: the lease ran out`);
  await sleep(400);
  try {
    await slow.unlock();
  } catch (error) {
    if (!(error instanceof LockNotHeldError)) throw error;
    say('slow', `unlock refused: ${error.code} (its lease had expired)`);
  }
  await other.unlock();
}

async function wakeUp(client: LockClient, waiterClient: LockClient): Promise<void> {
  heading('5. a waiter sleeps without polling and is woken by the release message');
  const holder: RLock = client.getLock('job:emails');
  await holder.lock();
  say('holder', 'holds job:emails (watchdog lease)');
  const waiter = waiterClient.getLock('job:emails');
  const waiting = waiter.tryLock(10_000);
  say('waiter', 'waits up to 10 s, subscribed to redisson_lock__channel:{job:emails}');
  await sleep(700);
  const releasedAt = performance.now();
  say('holder', 'releases job:emails (publishes 0 on the channel)');
  await holder.unlock();
  if (await waiting) {
    say(
      'waiter',
      `woken and holding job:emails ${Math.round(performance.now() - releasedAt)} ms after the release`,
    );
    await waiter.unlock();
  }
}

async function main(): Promise<void> {
  const { redis, where, done } = await connect();
  console.log(`rlock demo on ${where}`);
  const client = new LockClient(redis, { watchdogTimeout: 1_500 });
  // Closed below like the first: a LockClient closes only the connections it opened itself.
  const otherConnection = redis.duplicate();
  const otherProcess = new LockClient(otherConnection, { watchdogTimeout: 1_500 });
  client.on('lockLost', (event) => say('lockLost', `${event.name}: ${event.reason}`));
  try {
    await contention(client);
    await reentry(client);
    await watchdog(client);
    await leaseExpiry(client);
    await wakeUp(client, otherProcess);
  } finally {
    await client.close();
    await otherProcess.close();
    otherConnection.disconnect();
    done();
  }
  console.log('\ndemo finished');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
