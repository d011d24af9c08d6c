/**
 * `npm run bench:steps [-- --dist <folder>]`: where the time of one uncontended lock + unlock goes,
 * step by step, on a fresh redis-server: client CPU and wall time per call (sequential, one
 * connection), and Redis CPU per call (INFO commandstats), beside a `SET NX PX` + compare-and-delete
 * `EVAL` pair, the floor Redisson's layout sets (scripts that only take and free a hash lock), that
 * floor with the two reads rlock's guarantees need (bench/layout-floor.ts), an empty script and a
 * PING round trip. Prints a markdown table (docs/hot-path.md keeps the figures).
 *
 * `--dist` measures another build of rlock (a folder holding index.cjs), to set a change beside
 * the build it replaces.
 *
 * `--instructions` runs the server under valgrind and counts, instead of times, what each call
 * costs Redis: the instructions it executes per call, alone and above a PING's (the reading,
 * parsing and answering every command pays). Counts repeat within half a percent on any machine,
 * so they settle what times on a shared machine leave to the noise. One round; the times are not
 * shown.
 */
import { resolve } from 'node:path';
import type Redis from 'ioredis';
import { startRedis } from '../__tests__/helpers/redis-server';
import { FLOOR_FREE, FLOOR_TAKE } from './layout-floor';
import { instructionCounter, type InstructionCounter } from './redis-instructions';

const distIndex = process.argv.indexOf('--dist');
const dist = resolve(
  distIndex >= 0 ? (process.argv[distIndex + 1] as string) : resolve(__dirname, '../dist'),
);
// eslint-disable-next-line @typescript-eslint/no-require-imports
const rlock = require(resolve(dist, 'index.cjs')) as typeof import('../src/index');

const CALLS = 5_000;

const counter: InstructionCounter | undefined = process.argv.includes('--instructions')
  ? instructionCounter()
  : undefined;

interface Step {
  step: string;
  clientMicros: number;
  wallMicros: number;
  redisMicros: number;
  /** Instructions Redis executed per call (with --instructions). */
  redisInstructions: number;
}

const cpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** Total usec and calls of every script and command, from INFO commandstats. */
async function redisMicros(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let usec = 0;
  // A script's commands are listed apart and counted in its EVAL/EVALSHA too: count the scripts,
  // and the commands a client sends directly (the baseline's SET).
  for (const [, name, spent] of info.matchAll(/^cmdstat_(\S+?):calls=\d+,usec=(\d+)/gm)) {
    if (['evalsha', 'eval', 'set'].includes(name as string)) usec += Number(spent);
  }
  return usec;
}

/**
 * Runs `call(i)` CALLS times in sequence: client CPU, median wall time, Redis CPU and (with a
 * counter) Redis instructions per call.
 */
async function measure(
  server: { pid: number | undefined },
  admin: Redis,
  step: string,
  call: (i: number) => Promise<unknown>,
): Promise<Step> {
  const walls: number[] = [];
  await admin.config('RESETSTAT');
  counter?.start(server.pid as number);
  const cpuBefore = cpuMicros();
  for (let i = 0; i < CALLS; i += 1) {
    const started = performance.now();
    await call(i);
    walls.push(performance.now() - started);
  }
  const client = cpuMicros() - cpuBefore;
  const instructions = counter?.stop(server.pid as number) ?? 0;
  const redis = await redisMicros(admin);
  walls.sort((a, b) => a - b);
  return {
    step,
    clientMicros: client / CALLS,
    wallMicros: (walls[Math.floor(CALLS / 2)] as number) * 1000,
    redisMicros: redis / CALLS,
    redisInstructions: instructions / CALLS,
  };
}

/**
 * A server that keeps a replication backlog copies every write into it: a replica attached while it
 * was measured, or it started from a dump.rdb that carried replication state. Nothing measured on
 * it then is this build's cost.
 */
async function requireNoReplication(admin: Redis): Promise<void> {
  const replication = await admin.info('replication');
  if (/^repl_backlog_active:1/m.test(replication)) {
    throw new Error('the measured server kept a replication backlog: its figures are void, run again');
  }
}

/** One round of every step, on a fresh server. */
async function round(): Promise<Step[]> {
  // Counted, the server's timed work must not count: it grows with the wall time a step takes
  // (slower on a busy machine), not with its calls. Its cron runs once a second instead of ten
  // times, and expired keys wait to be read instead of being sampled for.
  const server = await startRedis(counter ? ['--hz', '1'] : [], [], counter?.wrapper);
  const admin = server.connect();
  const redis = server.connect();
  if (counter) await admin.call('DEBUG', 'SET-ACTIVE-EXPIRE', '0');
  const steps: Step[] = [];
  const measured = async (step: string, call: (i: number) => Promise<unknown>): Promise<void> => {
    steps.push(await measure(server, admin, step, call));
  };
  try {
    // Warm both paths up (script loading, JIT) before anything is counted.
    const client = new rlock.LockClient(redis, { watchdogTimeout: 30_000 });
    for (const kind of ['getLock', 'getFairLock'] as const) {
      for (let i = 0; i < 2_000; i += 1) {
        const lock = client[kind](`warm:${i}`);
        await lock.lock();
        await lock.unlock();
      }
      const locks = Array.from({ length: CALLS }, (_, i) => client[kind](`${kind}:${i}`));
      await measured(`${kind} lock()`, (i) => (locks[i] as { lock(): Promise<void> }).lock());
      await measured(`${kind} unlock()`, (i) => (locks[i] as { unlock(): Promise<void> }).unlock());
    }
    await client.close();

    const compareAndDelete =
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
    const sha = (await redis.script('LOAD', compareAndDelete)) as string;
    for (let i = 0; i < 2_000; i += 1) {
      await redis.set(`warm:set:${i}`, 't', 'PX', 30_000, 'NX');
      await redis.evalsha(sha, 1, `warm:set:${i}`, 't');
    }
    await measured('SET NX PX', (i) => redis.set(`set:${i}`, 't', 'PX', 30_000, 'NX'));
    await measured('compare-and-delete EVALSHA', (i) => redis.evalsha(sha, 1, `set:${i}`, 't'));
    // The least any script that takes and frees a lock in Redisson's layout does — a hash with an
    // expiry, deleted with an announcement — with no ownership check and no re-send marks: the
    // floor that layout sets, beside the string lock's SET NX PX.
    const floorTake = (await redis.script(
      'LOAD',
      "redis.call('hset', KEYS[1], ARGV[1], 1) redis.call('pexpire', KEYS[1], ARGV[2]) return 1",
    )) as string;
    const floorFree = (await redis.script(
      'LOAD',
      "redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], '0') return 1",
    )) as string;
    // The floor again with the two reads rlock's guarantees need, and nothing else (layout-floor.ts).
    const checkedTake = (await redis.script('LOAD', FLOOR_TAKE)) as string;
    const checkedFree = (await redis.script('LOAD', FLOOR_FREE)) as string;
    const empty = (await redis.script('LOAD', 'return 1')) as string;
    await measured('layout floor: HSET + PEXPIRE script', (i) =>
      redis.evalsha(floorTake, 1, `floor:${i}`, 'owner:1', 30_000),
    );
    await measured('layout floor: DEL + PUBLISH script', (i) =>
      redis.evalsha(floorFree, 2, `floor:${i}`, 'floor-channel'),
    );
    await measured('floor + checks: EXISTS, HSET + PEXPIRE script', (i) =>
      redis.evalsha(checkedTake, 2, `checked:${i}`, `checked-latch:${i}`, 'owner:1', 30_000, `mark:${i}`),
    );
    await measured('floor + checks: HMGET, DEL + PUBLISH script', (i) =>
      redis.evalsha(checkedFree, 2, `checked:${i}`, 'checked-channel', 'owner:1', `mark:${i}`),
    );
    await measured('empty script', () => redis.evalsha(empty, 0));
    await measured('PING (round trip)', () => redis.ping());
    await requireNoReplication(admin);
  } finally {
    await server.stop();
  }
  return steps;
}

// Counted instructions repeat within half a percent: one round of them is enough.
const ROUNDS = counter ? 1 : 3;

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

async function main(): Promise<void> {
  const rounds: Step[][] = [];
  for (let i = 0; i < ROUNDS; i += 1) rounds.push(await round());
  // Each figure is the median of its rounds: one round can meet a GC pause or a busy core.
  const steps = (rounds[0] as Step[]).map((first, i) => {
    const of = (pick: (step: Step) => number): number => median(rounds.map((r) => pick(r[i] as Step)));
    return {
      step: first.step,
      wallMicros: of((s) => s.wallMicros),
      clientMicros: of((s) => s.clientMicros),
      redisMicros: of((s) => s.redisMicros),
      redisInstructions: of((s) => s.redisInstructions),
    };
  });
  const f = (value: number): string => value.toFixed(1);
  if (counter) {
    printInstructions(steps);
    return;
  }
  console.log(`rlock build: ${dist} (median of ${ROUNDS} rounds of ${CALLS} calls per step)\n`);
  console.log('| step | wall p50 µs | client CPU µs | Redis CPU µs |');
  console.log('|---|---:|---:|---:|');
  for (const step of steps)
    console.log(
      `| ${step.step} | ${f(step.wallMicros)} | ${f(step.clientMicros)} | ${f(step.redisMicros)} |`,
    );
}

function printInstructions(steps: Step[]): void {
  const ping = steps.find((step) => step.step.startsWith('PING'))?.redisInstructions ?? 0;
  const n = (value: number): string => Math.round(value).toLocaleString('en-US');
  console.log(`rlock build: ${dist} (${CALLS} calls per step, Redis under callgrind)\n`);
  console.log('| step | Redis instructions per call | above a PING |');
  console.log('|---|---:|---:|');
  for (const step of steps) {
    console.log(`| ${step.step} | ${n(step.redisInstructions)} | ${n(step.redisInstructions - ping)} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
