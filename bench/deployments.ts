/**
 * `npm run bench:deployments`: rlock on one redis-server and on a 3-master Redis Cluster, with
 * sharded and with classic pub/sub, in one run on one machine. What a cluster costs a lock — the
 * uncontended round trip and the hand-off from a releasing holder to a waiting client, with a
 * single-key GET as each one's baseline — and what each release costs the cluster bus.
 * Prints a table and writes bench/results/deployments-<timestamp>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type Redis from 'ioredis';
import { startCluster } from '../__tests__/helpers/redis-cluster';
import { startRedis } from '../__tests__/helpers/redis-server';
import { LockClient, type LockClientOptions, type RLock } from '../src';
import { now, sleep } from './clock';
import { percentile } from './stats';

const ROUNDS = 500;

interface Figures {
  get: number[];
  uncontended: number[];
  handOffLock: number[];
  handOffFairLock: number[];
  /** Messages the cluster bus carried for pub/sub, per announced release (0 on one server). */
  busMessagesPerRelease: number;
}

/** Counters summed over a deployment's servers. */
interface Counters {
  /** PUBLISH and SPUBLISH calls (releases announced, from inside the scripts). */
  announcements: number;
  /** Pub/sub messages the nodes sent each other over the cluster bus. */
  busMessages: number;
}

async function measure(
  connect: () => Redis,
  options: LockClientOptions,
  counters: () => Promise<Counters>,
): Promise<Figures> {
  const admin = connect();
  const holder = new LockClient(connect(), options);
  const waiter = new LockClient(connect(), options);
  try {
    const get: number[] = [];
    const uncontended: number[] = [];
    for (let i = 0; i < ROUNDS; i += 1) {
      let start = now();
      await admin.get('bench:get');
      get.push(now() - start);
      const lock = holder.getLock(`bench:uncontended:${i % 16}`);
      start = now();
      await lock.lock(10_000);
      await lock.unlock();
      uncontended.push(now() - start);
    }
    const before = await counters();
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
    const handOffLock = await handOff((client, name) => client.getLock(name));
    const handOffFairLock = await handOff((client, name) => client.getFairLock(name));
    const after = await counters();
    const announced = after.announcements - before.announcements;
    return {
      get,
      uncontended,
      handOffLock,
      handOffFairLock,
      busMessagesPerRelease: (after.busMessages - before.busMessages) / announced,
    };
  } finally {
    await holder.close();
    await waiter.close();
  }
}

function summary(samples: number[]): string {
  return `${percentile(samples, 50).toFixed(3)} / ${percentile(samples, 99).toFixed(3)}`;
}

async function main(): Promise<void> {
  const server = await startRedis();
  const cluster = await startCluster();
  const sum = (text: string, pattern: RegExp): number =>
    [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0);
  const countersOf = async (servers: Array<{ connect(): Redis }>, clustered: boolean): Promise<Counters> => {
    const counters = { announcements: 0, busMessages: 0 };
    for (const node of servers) {
      const connection = node.connect();
      counters.announcements += sum(
        await connection.info('commandstats'),
        /^cmdstat_s?publish:calls=(\d+)/gm,
      );
      if (clustered) {
        const info = String(await connection.cluster('INFO'));
        counters.busMessages += sum(info, /^cluster_stats_messages_publish(?:shard)?_sent:(\d+)/gm);
      }
    }
    return counters;
  };
  const onCluster = (): Redis => cluster.connect() as unknown as Redis;
  const deployments = {
    'one server': () =>
      measure(
        () => server.connect(),
        {},
        () => countersOf([server], false),
      ),
    'cluster, sharded': () =>
      measure(onCluster, { pubSub: 'sharded' }, () => countersOf(cluster.nodes, true)),
    'cluster, classic': () =>
      measure(onCluster, { pubSub: 'classic' }, () => countersOf(cluster.nodes, true)),
  };
  try {
    const results: Record<string, Figures> = {};
    // A first pass of each warms up the process (JIT, connections); the second pass counts.
    for (const pass of [1, 2]) {
      for (const [name, run] of Object.entries(deployments)) {
        process.stderr.write(`\r\x1b[K[bench] pass ${pass}: ${name}`);
        results[name] = await run();
      }
    }
    process.stderr.write('\r\x1b[K');
    const names = Object.keys(deployments);
    const rows: Array<[string, (figures: Figures) => string]> = [
      ['GET (baseline) p50/p99 ms', (f) => summary(f.get)],
      ['lock + unlock p50/p99 ms', (f) => summary(f.uncontended)],
      ['hand-off getLock p50/p99 ms', (f) => summary(f.handOffLock)],
      ['hand-off getFairLock p50/p99 ms', (f) => summary(f.handOffFairLock)],
      ['bus messages per release', (f) => f.busMessagesPerRelease.toFixed(2)],
    ];
    console.log(`| figure | ${names.join(' | ')} |\n|---|${names.map(() => '---:|').join('')}`);
    for (const [label, cell] of rows) {
      console.log(`| ${label} | ${names.map((name) => cell(results[name] as Figures)).join(' | ')} |`);
    }
    const dir = resolve(__dirname, 'results');
    mkdirSync(dir, { recursive: true });
    const date = new Date().toISOString();
    const file = resolve(dir, `deployments-${date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify({ date, rounds: ROUNDS, results }, null, 2)}\n`);
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
