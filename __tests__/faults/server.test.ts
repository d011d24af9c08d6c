import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LockClient, RedisUnavailableError, type LockLostEvent } from '../../src';
import { startRedis } from '../helpers/redis-server';
import { useRedis } from '../helpers/setup';
import { reportFault } from '../helpers/report';
import { eventually, sleep, timed } from '../helpers/wait';

// Faults of the server itself: its script cache, its data, and what it is asked.
describe('fault: the server', () => {
  const redis = useRedis();

  test('SCRIPT FLUSH under load: every operation still succeeds, the counter stays exact', async () => {
    const client = redis.client();
    const admin = redis.admin();
    let flushes = 0;
    let flushing = true;
    const flusher = (async () => {
      while (flushing) {
        await admin.script('FLUSH');
        flushes += 1;
        await sleep(5);
      }
    })();
    let counter = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 50; i += 1) {
          await client.getLock('f-flush').withLock(async () => {
            const value = counter;
            await sleep(0);
            counter = value + 1;
          });
        }
      }),
    );
    flushing = false;
    await flusher;
    reportFault('SCRIPT FLUSH under load', { flushes, acquisitions: counter, expected: 400 });
    expect(flushes).toBeGreaterThan(10);
    expect(counter).toBe(400);
  }, 30_000);

  test('redis-server restarted with its data gone: holders are told, waiters and new callers carry on', async () => {
    const server = await startRedis();
    const holderClient = new LockClient(server.connect(), { watchdogTimeout: 1_000 });
    const waiterClient = new LockClient(server.connect());
    try {
      const lost: LockLostEvent[] = [];
      holderClient.on('lockLost', (event) => lost.push(event));
      await holderClient.getLock('f-restart').lock();
      const waiting = waiterClient.getLock('f-restart').tryLock(10_000);
      await sleep(100);
      await server.restart();
      // The lock is gone with the data: the waiter takes it after its subscriber reconnects.
      expect(await waiting).toBe(true);
      await sleep(1_000);
      reportFault('redis-server restarted', { holdersTold: lost.length, waiterAcquired: 'true' });
      expect(lost.map((event) => event.name)).toEqual(['f-restart']);
      expect(await holderClient.getLock('f-other').tryLock()).toBe(true);
    } finally {
      await holderClient.close();
      await waiterClient.close();
      await server.stop();
    }
  }, 30_000);

  test('an unlock() that could not be sent during an outage is sent again once Redis is back', async () => {
    // The data survives the restart (append-only file), so only rlock's own re-send frees the lock.
    const dir = mkdtempSync(join(tmpdir(), 'rlock-aof-'));
    const server = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir]);
    const connection = server.connect();
    const client = new LockClient(connection, { commandTimeout: 500 });
    try {
      const lock = client.getLock('f-resend');
      await lock.lock(30_000);
      await server.down();
      // ioredis has seen the socket close: the release is never written before the restart.
      await eventually('connection down', () => connection.status !== 'ready');
      const unlocked = await timed(lock.unlock());
      expect(unlocked.error).toBeInstanceOf(RedisUnavailableError);
      await server.up();
      const admin = server.connect();
      expect(await admin.pttl('f-resend')).toBeGreaterThan(20_000);
      await eventually('released', async () => (await admin.exists('f-resend')) === 0, 5_000);
      reportFault('unlock() during an outage', { unlockMs: unlocked.ms });
    } finally {
      await client.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);

  test('bad input at scale: every one of 2000 calls is a clear error, nothing reaches Redis', async () => {
    const client = redis.client();
    const values: unknown[] = [Number.NaN, -2, -0.5, 1.5, 2 ** 31, Infinity, -Infinity, '10', null, true];
    const names: unknown[] = ['', 1, null, undefined, {}, Symbol('x')];
    let clearErrors = 0;
    let total = 0;
    for (let i = 0; i < 2_000; i += 1) {
      const value = values[i % values.length];
      const name = names[i % names.length];
      const calls: Array<() => Promise<unknown>> = [
        () => client.getLock('f-bad').tryLock(value as number),
        () => client.getLock('f-bad').lock(value as number),
        () => client.getFencedLock('f-bad').tryLockAndGetToken(0, value as number),
        () => client.getFairLock('f-bad').tryLock({ waitTime: value as number }),
        async () => client.getLock(name as string),
      ];
      const call = calls[i % calls.length] as () => Promise<unknown>;
      total += 1;
      try {
        await call();
      } catch (error) {
        if ((error instanceof TypeError || error instanceof RangeError) && /must be/.test(error.message)) {
          clearErrors += 1;
        }
      }
    }
    reportFault('bad input at scale', {
      calls: total,
      clearErrors,
      keysInRedis: await redis.admin().dbsize(),
    });
    expect(clearErrors).toBe(total);
    expect(await redis.admin().dbsize()).toBe(0);
  });
});
