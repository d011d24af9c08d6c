/**
 * `npm run bench:deployments`: rlock on one redis-server and on a 3-master Redis Cluster (sharded
 * pub/sub), in one run on one machine. What a cluster costs a lock: the uncontended round trip and
 * the hand-off from a releasing holder to a waiting client, with PING as each one's baseline.
 * Prints a table and writes bench/results/deployments-<timestamp>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type Redis from 'ioredis';
import { startCluster } from '../__tests__/helpers/redis-cluster';
import { startRedis } from '../__tests__/helpers/redis-server';
import { LockClient, type RLock } from '../src';
import { now, sleep } from './clock';
import { percentile } from './stats';

const ROUNDS = 500;

interface Figures {
  ping: number[];
  uncontended: number[];
  handOffLock: number[];
  handOffFairLock: number[];
}

async function measure(connect: () => Redis): Promise<Figures> {
  const admin = connect();
  const holder = new LockClient(connect());
  const waiter = new LockClient(connect());
  try {
    const ping: number[] = [];
    const uncontended: number[] = [];
    for (let i = 0; i < ROUNDS; i += 1) {
      let start = now();
      await admin.get('bench:ping');
      ping.push(now() - start);
      const lock = holder.getLock(`bench:uncontended:${i % 16}`);
      start = now();
      await lock.lock(10_000);
      await lock.unlock();
      uncontended.push(now() - start);
    }
    const handOff = async (get: (client: LockClient, name: string) => RLock): Promise<number[]> => {
      const samples: number[] = [];
      for (let i = 0; i < ROUNDS; i += 1) {
        const name = `bench:handoff:${i % 16}`;
        const held = get(holder, name);
        await held.lock(10_000);
        let acquiredAt = 0;
        const waiting = get(waiter, name)
          .tryLock(5_000, 10_000)
          .then(() => (acquiredAt = now()));
        await sleep(2); // the waiter has tried and sleeps on its subscription
        const releasedAt = now();
        await held.unlock();
        await waiting;
        samples.push(acquiredAt - releasedAt);
        await get(waiter, name).forceUnlock();
      }
      return samples;
    };
    return {
      ping,
      uncontended,
      handOffLock: await handOff((client, name) => client.getLock(name)),
      handOffFairLock: await handOff((client, name) => client.getFairLock(name)),
    };
  } finally {
    await holder.close();
    await waiter.close();
  }
}

function summary(samples: number[]): { p50: number; p99: number } {
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function main(): Promise<void> {
  const server = await startRedis();
  const cluster = await startCluster();
  try {
    // A first pass of each warms up the process (JIT, connections); the second pass counts.
    let standalone = await measure(() => server.connect());
    let clustered = await measure(() => cluster.connect() as unknown as Redis);
    standalone = await measure(() => server.connect());
    clustered = await measure(() => cluster.connect() as unknown as Redis);
    const rows = (['ping', 'uncontended', 'handOffLock', 'handOffFairLock'] as const).map((figure) => {
      const one = summary(standalone[figure]);
      const many = summary(clustered[figure]);
      return { figure, standalone: one, cluster: many, ratioP50: many.p50 / one.p50 };
    });
    console.log('figure            standalone p50/p99 ms   cluster p50/p99 ms   cluster/standalone (p50)');
    for (const row of rows) {
      console.log(
        `${row.figure.padEnd(18)}${`${row.standalone.p50.toFixed(3)} / ${row.standalone.p99.toFixed(3)}`.padEnd(24)}` +
          `${`${row.cluster.p50.toFixed(3)} / ${row.cluster.p99.toFixed(3)}`.padEnd(21)}${row.ratioP50.toFixed(2)}x`,
      );
    }
    const dir = resolve(__dirname, 'results');
    mkdirSync(dir, { recursive: true });
    const date = new Date().toISOString();
    const file = resolve(dir, `deployments-${date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify({ date, rounds: ROUNDS, rows }, null, 2)}\n`);
    console.log(`results: ${file}`);
  } finally {
    await server.stop();
    await cluster.stop();
  }
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
