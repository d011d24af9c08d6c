/**
 * `npm run bench:read-write`: the read-write lock under a read-heavy mix, next to a plain lock, on
 * one fresh redis-server, and how long a writer waits under a stream of overlapping readers with
 * and without writerPreference. Workers are tasks of one process here (each its own owner, all on
 * one client): the figures compare the kinds with each other, not with other libraries.
 * `QUICK=1` runs a short variant. Prints a table and writes bench/results/read-write-<timestamp>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startRedis } from '../__tests__/helpers/redis-server';
import { LockClient, type RLock } from '../src';
import { now, sleep } from './clock';
import { percentile } from './stats';

const QUICK = process.env.QUICK === '1';
const WORKERS = 8;
const MIX_MS = QUICK ? 1_500 : 10_000;
/** Each hold does this much "work" (a read of a cache, a write of it). */
const HOLD_MS = 2;
const WRITE_SHARE = 0.05;
const STARVE_ROUNDS = QUICK ? 3 : 20;

interface Mix {
  opsPerSecond: number;
  readP99: number;
  writeP99: number;
}

/** WORKERS tasks for MIX_MS, each doing 95% reads and 5% writes through `pick`. */
async function mix(client: LockClient, pick: (write: boolean) => RLock): Promise<Mix> {
  const reads: number[] = [];
  const writes: number[] = [];
  const until = now() + MIX_MS;
  await Promise.all(
    Array.from({ length: WORKERS }, () =>
      client.runInTask(async () => {
        while (now() < until) {
          const write = Math.random() < WRITE_SHARE;
          const started = now();
          await pick(write).withLock(() => sleep(HOLD_MS));
          (write ? writes : reads).push(now() - started);
        }
      }),
    ),
  );
  return {
    opsPerSecond: Math.round(((reads.length + writes.length) * 1000) / MIX_MS),
    readP99: percentile(reads, 99),
    writeP99: percentile(writes, 99),
  };
}

/**
 * Readers arrive every 10 ms and read for 50 ms each (always overlapping); a writer asks once the
 * stream runs and waits up to 2 s. Returns each round's writer wait (2000: it never got in).
 */
async function writerWait(client: LockClient, writerPreference: boolean): Promise<number[]> {
  const waits: number[] = [];
  for (let round = 0; round < STARVE_ROUNDS; round += 1) {
    const name = `bench:starve:${writerPreference}:${round}`;
    let streaming = true;
    const readers: Array<Promise<unknown>> = [];
    const stream = (async () => {
      while (streaming) {
        readers.push(
          client.runInTask(() =>
            client
              .getReadWriteLock(name)
              .readLock()
              .withLock(() => sleep(50)),
          ),
        );
        await sleep(10);
      }
    })();
    await sleep(100);
    const writer = client.getReadWriteLock(name, { writerPreference }).writeLock();
    const started = now();
    const taken = await writer.tryLock(2_000);
    waits.push(taken ? now() - started : 2_000);
    if (taken) await writer.unlock();
    streaming = false;
    await stream;
    await Promise.all(readers);
  }
  return waits;
}

async function main(): Promise<void> {
  const server = await startRedis();
  const redis = server.connect();
  const client = new LockClient(redis);
  try {
    const plain = await mix(client, () => client.getLock('bench:mix:plain'));
    const rw = await mix(client, (write) => {
      const lock = client.getReadWriteLock('bench:mix:rw');
      return write ? lock.writeLock() : lock.readLock();
    });
    const readerPreferring = await writerWait(client, false);
    const writerPreferring = await writerWait(client, true);
    const results = {
      date: new Date().toISOString(),
      quick: QUICK,
      workers: WORKERS,
      holdMs: HOLD_MS,
      mix: { plain, rw },
      writerWait: {
        readerPreference: { p50: percentile(readerPreferring, 50), max: Math.max(...readerPreferring) },
        writerPreference: { p50: percentile(writerPreferring, 50), max: Math.max(...writerPreferring) },
      },
    };
    console.log(`95% reads / 5% writes, ${WORKERS} tasks, ${HOLD_MS} ms holds, ${MIX_MS} ms:`);
    console.log(`  getLock           ${plain.opsPerSecond} ops/s  p99 ${plain.readP99.toFixed(1)} ms`);
    console.log(
      `  getReadWriteLock  ${rw.opsPerSecond} ops/s  read p99 ${rw.readP99.toFixed(1)} ms, write p99 ${rw.writeP99.toFixed(1)} ms`,
    );
    console.log('writer wait under overlapping readers (2000 = never got in within 2 s):');
    console.log(
      `  reader preference (Redisson)  p50 ${results.writerWait.readerPreference.p50.toFixed(0)} ms`,
    );
    console.log(
      `  writerPreference              p50 ${results.writerWait.writerPreference.p50.toFixed(0)} ms`,
    );
    const dir = resolve(__dirname, 'results');
    mkdirSync(dir, { recursive: true });
    if (!QUICK)
      writeFileSync(
        resolve(dir, `read-write-${results.date.replace(/[:.]/g, '-')}.json`),
        JSON.stringify(results, null, 2),
      );
  } finally {
    await client.close();
    redis.disconnect();
    await server.stop();
  }
}

void main();
