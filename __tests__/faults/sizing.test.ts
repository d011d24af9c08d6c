import { LockClient, type LockLostEvent } from '../../src';
import { reportFault } from '../helpers/report';
import { startRedis, type RedisServer } from '../helpers/redis-server';
import { sleep } from '../helpers/wait';

/**
 * The sizing rule of docs/production.md, on a real restart: a watchdog lease outlives an outage
 * when two thirds of `watchdogTimeout` (what is left of a lease when its renewal is due) cover the
 * outage plus a retry period (1 s) and the reconnect. A 2.5 s restart that keeps the data loses a
 * 3 s lease and keeps a 9 s one.
 */
describe('a watchdog lease across a 2.5 s restart that keeps the data', () => {
  let server: RedisServer;

  beforeEach(async () => {
    server = await startRedis();
  });
  afterEach(async () => {
    await server.stop();
  });

  /** Holds a lock, restarts the server for `outageMs` with its data, and says what became of it. */
  async function holdAcrossRestart(watchdogTimeout: number, outageMs: number) {
    const client = new LockClient(server.connect(), { watchdogTimeout, commandTimeout: 500 });
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    try {
      const lock = client.getLock(`sizing-${watchdogTimeout}`);
      await lock.lock();
      // The worst moment: just before a renewal is due, two thirds of the lease left.
      await sleep(watchdogTimeout / 3 - 50);
      const admin = server.connect();
      await admin.save();
      admin.disconnect();
      await server.down();
      await sleep(outageMs);
      await server.up({ keepData: true });
      // Long enough for the lease to have ended had it not been renewed after the restart.
      await sleep(Math.max(1_500, (watchdogTimeout * 2) / 3 - outageMs + 1_000));
      const held = await lock.isHeldByCurrentTask();
      if (held) await lock.unlock();
      return { held, lost: lost.map((event) => event.code) };
    } finally {
      await client.close();
    }
  }

  test('watchdogTimeout 3 s: the lease ends during the restart, and the holder is told', async () => {
    const outcome = await holdAcrossRestart(3_000, 2_500);
    reportFault('3 s lease, 2.5 s restart', { held: String(outcome.held), lost: outcome.lost.join(',') });
    expect(outcome.held).toBe(false);
    expect(outcome.lost).toEqual(['renewal-failed']);
  }, 20_000);

  test('watchdogTimeout 9 s (2/3 of it above 2.5 s + 1 s + the reconnect): the lease is kept', async () => {
    const outcome = await holdAcrossRestart(9_000, 2_500);
    reportFault('9 s lease, 2.5 s restart', { held: String(outcome.held), lost: outcome.lost.join(',') });
    expect(outcome).toEqual({ held: true, lost: [] });
  }, 30_000);
});
