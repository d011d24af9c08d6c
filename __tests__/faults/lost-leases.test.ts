import { LockClient, LockNotHeldError, type LockLostEvent } from '../../src';
import { reportFault } from '../helpers/report';
import { startRedis, type RedisServer } from '../helpers/redis-server';
import { useRedis } from '../helpers/setup';
import { startWorker } from '../helpers/workers';
import { eventually, sleep } from '../helpers/wait';
import { FaultProxy } from '../helpers/proxy';

/**
 * A lost lease is reported with the reason that ended it, whichever timer notices first: the
 * holder's own next call or the watchdog's tick. 'lease-expired' when the holder's process stood
 * still (blocked event loop, stopped process) past the lease; 'renewal-failed' when it ran and
 * Redis did not renew (down, restarting).
 */

function blockFor(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

describe('why a watchdog lease was lost', () => {
  describe('Redis down while the holder runs', () => {
    let server: RedisServer;
    let client: LockClient;

    beforeEach(async () => {
      server = await startRedis();
      client = new LockClient(server.connect(), { watchdogTimeout: 3_000, commandTimeout: 500 });
    });
    afterEach(async () => {
      await client.close();
      await server.stop();
    });

    test('the holder unlocking first is told renewal-failed, as the watchdog would have told it', async () => {
      const lost: LockLostEvent[] = [];
      client.on('lockLost', (event) => lost.push(event));
      const lock = client.getLock('ll-down');
      const lockedAt = performance.now();
      await lock.lock();
      await server.down();
      // Renewals fail from the first (1 s in) on; the lease ends 3 s in, when the watchdog looks
      // again: the holder's call just after finds the loss told.
      await sleep(3_300 - (performance.now() - lockedAt));
      const error = await lock.unlock().catch((e: unknown) => e);
      reportFault('lease lost while Redis was down', { codes: lost.map((event) => event.code).join(',') });
      expect(error).toBeInstanceOf(LockNotHeldError);
      expect((error as Error).message).toMatch(/renewal-failed/);
      expect(lost.map((event) => event.code)).toEqual(['renewal-failed']);
      expect(lost[0]?.reason).toMatch(/renewals failed \(last: .*lock "ll-down"/);
    }, 20_000);

    test("a holder cut off from Redis is told as its lease ends, whatever ioredis' own commandTimeout", async () => {
      // ioredis fails each renewal 2 s after it went out, in its own time; the lease ends 3 s in.
      const proxy = await new FaultProxy(server.port).start();
      const connection = server.connect({ port: proxy.port, commandTimeout: 2_000 });
      await connection.ping();
      const holder = new LockClient(connection, { watchdogTimeout: 3_000 });
      holder.on('redisError', () => undefined);
      const lost: Array<{ code: string; at: number }> = [];
      holder.on('lockLost', (event) => lost.push({ code: event.code, at: performance.now() }));
      try {
        const sentAt = performance.now();
        await holder.getLock('ll-cut-off').lock();
        await sleep(700);
        // Nothing gets through any more, either way: a network partition.
        proxy.delayRequests(60_000);
        proxy.dropReplies();
        await eventually('told', () => lost.length > 0, 6_000);
        const toldMs = (lost[0] as { at: number }).at - sentAt;
        reportFault('holder cut off, ioredis commandTimeout 2 s', { toldMs });
        expect(lost.map((event) => event.code)).toEqual(['renewal-failed']);
        // Told as the lease ends, not when ioredis gave up on a renewal sent before that.
        expect(toldMs).toBeGreaterThanOrEqual(3_000 - 50);
        expect(toldMs).toBeLessThan(3_000 + 250);
      } finally {
        await proxy.stop();
        await holder.close();
      }
    }, 20_000);

    test('Redis restarted (its data gone) while the holder ran: renewal-failed, then renewal-refused never', async () => {
      const lost: LockLostEvent[] = [];
      client.on('lockLost', (event) => lost.push(event));
      const lock = client.getLock('ll-restart');
      await lock.lock();
      await server.down();
      await sleep(3_500);
      await server.up();
      await sleep(1_500);
      expect(lost.map((event) => event.code)).toEqual(['renewal-failed']);
      await expect(lock.unlock()).rejects.toThrow(/renewal-failed/);
    }, 20_000);
  });

  describe('the holder stood still', () => {
    const redis = useRedis();

    test.each([
      ['the holder calls before the watchdog ticks', true],
      ['the watchdog ticks first', false],
    ])(
      'a blocked event loop past the lease: lease-expired (%s)',
      async (_order, holderFirst) => {
        const client = redis.client({ watchdogTimeout: 1_500 });
        const lost: LockLostEvent[] = [];
        client.on('lockLost', (event) => lost.push(event));
        const lock = client.getLock('ll-blocked');
        await lock.lock();
        blockFor(2_500);
        if (!holderFirst) await sleep(100);
        const error = await lock.unlock().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockNotHeldError);
        expect(lost.map((event) => event.code)).toEqual(['lease-expired']);
        expect(lost[0]?.reason).toMatch(/not running \(its event loop stood still for \d+ ms/);
        expect((error as Error).message).toMatch(/lease-expired/);
      },
      20_000,
    );

    test('a stopped process (SIGSTOP) past its lease: lease-expired once it runs again', async () => {
      const worker = startWorker([String(redis.port())], {}, 'stall-worker');
      try {
        expect(await worker.firstMessage).toBe('ready');
        worker.child.send('hold');
        expect(await worker.nextMessage()).toBe('held');
        worker.child.kill('SIGSTOP');
        await sleep(2_000);
        worker.child.kill('SIGCONT');
        await sleep(200);
        worker.child.send('report');
        const report = JSON.parse(await worker.nextMessage()) as { lost: string[]; unlock: unknown };
        reportFault('holder process stopped past its lease', {
          lost: report.lost.join(','),
          unlock: String(report.unlock),
        });
        expect(report).toEqual({ lost: ['sp-lease:lease-expired'], unlock: 'ERR_LOCK_NOT_HELD' });
      } finally {
        worker.child.kill('SIGKILL');
      }
    }, 20_000);
  });
});
