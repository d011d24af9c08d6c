/**
 * `npm run bench`: measures on a redis-server of its own, and reports every latency beside a PING
 * round trip measured in the same run on the same kind of connection.
 * Scenarios so far: baseline PING, uncontended lock + unlock (watchdog lock and leased lock), and
 * hand-off: the time from a release to the waiting owner (another client) holding the lock.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { cpus } from 'node:os';
import { LockClient, type RLock } from '../src';
import { startRedis } from '../__tests__/helpers/redis-server';

const quick = process.argv.includes('--quick');
const ITERATIONS = quick ? 1_000 : 5_000;
const WARMUP = 200;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function measure(
  label: string,
  op: () => Promise<unknown>,
): Promise<{ label: string; p50: number; p99: number }> {
  for (let i = 0; i < WARMUP; i += 1) await op();
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i += 1) {
    const start = process.hrtime.bigint();
    await op();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  process.stderr.write(`  measured ${label}\n`);
  return { label, p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/**
 * One holder and one waiter on separate clients (separate connections, as two processes would
 * have): each sample starts when the holder calls unlock() and ends when the waiter's lock()
 * resolves. The waiter is queued (or subscribed) before the release, as under contention.
 */
async function measureHandoff(
  label: string,
  holderClient: LockClient,
  waiterClient: LockClient,
  getLock: (client: LockClient) => RLock,
): Promise<{ label: string; p50: number; p99: number }> {
  const samples: number[] = [];
  const rounds = Math.floor(ITERATIONS / 5);
  for (let i = 0; i < rounds + WARMUP / 5; i += 1) {
    const holder = getLock(holderClient);
    await holder.lock();
    let heldAt = 0n;
    const waiter = getLock(waiterClient);
    const waiting = waiter.lock().then(() => {
      heldAt = process.hrtime.bigint();
    });
    await new Promise((resolve) => setTimeout(resolve, 2));
    const releasedAt = process.hrtime.bigint();
    await holder.unlock();
    await waiting;
    if (i >= WARMUP / 5) samples.push(Number(heldAt - releasedAt) / 1e6);
    await waiter.unlock();
  }
  samples.sort((a, b) => a - b);
  process.stderr.write(`  measured ${label}\n`);
  return { label, p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function main(): Promise<void> {
  const server = await startRedis();
  const redis = server.connect();
  const client = new LockClient(redis);
  const waiterClient = new LockClient(server.connect());
  try {
    const watchdogLock = client.getLock('bench:uncontended');
    const leasedLock = client.getLock('bench:uncontended-lease');
    const rows = [
      await measure('PING round trip', () => redis.ping()),
      await measure('rlock getLock: lock() + unlock()', async () => {
        await watchdogLock.lock();
        await watchdogLock.unlock();
      }),
      await measure('rlock getLock: lock(10000) + unlock()', async () => {
        await leasedLock.lock(10_000);
        await leasedLock.unlock();
      }),
      await measureHandoff('hand-off: getLock (pub/sub wake, then acquire)', client, waiterClient, (c) =>
        c.getLock('bench:handoff'),
      ),
      await measureHandoff('hand-off: getFairLock (granted by the release)', client, waiterClient, (c) =>
        c.getFairLock('bench:handoff-fair'),
      ),
    ];
    const ping = rows[0]?.p50 ?? 1;
    console.log(`\n${ITERATIONS} iterations each, node ${process.version}, ${cpus().length} cpus`);
    console.log('| scenario | p50 ms | p99 ms | p50 / PING p50 |');
    console.log('|---|---:|---:|---:|');
    for (const row of rows) {
      console.log(
        `| ${row.label} | ${row.p50.toFixed(3)} | ${row.p99.toFixed(3)} | ${(row.p50 / ping).toFixed(2)}x |`,
      );
    }
    const dir = resolve(__dirname, 'results');
    mkdirSync(dir, { recursive: true });
    const file = resolve(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(
      file,
      JSON.stringify(
        { date: new Date().toISOString(), node: process.version, iterations: ITERATIONS, rows },
        null,
        2,
      ),
    );
    console.log(`\nresults written to ${file}`);
  } finally {
    await client.close();
    await waiterClient.close();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
