import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import Redis from 'ioredis';
import {
  HANDOFF_FLOOR,
  LABELS,
  LIBRARIES,
  openLibrary,
  openSubject,
  REFERENCES,
  type Library,
  type LibraryName,
  type Subject,
} from './adapters';
import { cpuMicros, now, sleep, within } from './clock';
import { runContenders } from './contenders';
import { contentionFigures, median, percentile, type ContentionFigures } from './stats';

/** What a scenario measured for one library, or why it could not. */
export type Outcome<T> = T | { failed: string };

/** The figures of an outcome that did not fail. */
export const ok = <T extends object>(outcome: Outcome<T> | undefined): T | undefined =>
  outcome && !('failed' in outcome) ? outcome : undefined;

export interface Settings {
  port: number;
  admin: Redis;
  quick: boolean;
}

/** Lets a library finish its own background work (unsubscribes, timers) before it is closed. */
async function closeSoftly(lib: Library): Promise<void> {
  await sleep(200);
  await lib.close().catch(() => undefined);
}

export function failed(error: unknown): { failed: string } {
  const message = error instanceof Error ? error.message : String(error);
  return { failed: message.split('\n')[0]?.slice(0, 120) ?? 'failed' };
}

async function stat(admin: Redis, section: string, field: string): Promise<number> {
  const info = await admin.info(section);
  return Number(new RegExp(`^${field}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
}

const redisCpuMs = async (admin: Redis): Promise<number> =>
  ((await stat(admin, 'cpu', 'used_cpu_user')) + (await stat(admin, 'cpu', 'used_cpu_sys'))) * 1000;
const commandsProcessed = (admin: Redis): Promise<number> => stat(admin, 'stats', 'total_commands_processed');

export interface Latency {
  p50: number;
  p99: number;
}

async function sampleLatency(iterations: number, op: () => Promise<unknown>): Promise<Latency> {
  for (let i = 0; i < Math.min(200, iterations); i += 1) await op();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    const start = now();
    await op();
    samples.push(now() - start);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

export async function pingLatency(settings: Settings): Promise<Latency> {
  return sampleLatency(settings.quick ? 1_000 : 5_000, () => settings.admin.ping());
}

/** Every subject of the side-by-side scenarios: the references, then the libraries. */
const SUBJECTS: Subject[] = [...REFERENCES, ...LIBRARIES];

/** SLOWLOG entry: id, unix time, duration in µs, arguments, client address, client name. */
type SlowlogEntry = [number, number, number, string[], string, string];

/** What the admin connection itself sends while a block is measured. */
const ADMIN_COMMANDS = new Set(['slowlog', 'config', 'info', 'dbsize', 'flushall']);

/**
 * The commands a client itself sends per pair, by name: SLOWLOG with every command logged tells
 * them from those its scripts run (logged from client "?:0"). Counted in a window of their own:
 * logging every command costs Redis time, inside the scripts too.
 */
async function commandsSentPerPair(admin: Redis, pairs: number, pair: () => Promise<void>) {
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.slowlog('RESET');
  try {
    for (let i = 0; i < pairs; i += 1) await pair();
  } finally {
    await admin.config('SET', 'slowlog-log-slower-than', '-1');
  }
  const sent = new Map<string, number>();
  for (const [, , , args, client] of (await admin.slowlog('GET', '-1')) as SlowlogEntry[]) {
    const command = String(args[0]).toLowerCase();
    if (client !== '?:0' && !ADMIN_COMMANDS.has(command))
      sent.set(command, (sent.get(command) ?? 0) + 1 / pairs);
  }
  return sent;
}

/** INFO commandstats: calls and usec per command. */
type CommandStats = Map<string, { calls: number; usec: number }>;

async function commandStats(admin: Redis): Promise<CommandStats> {
  const stats: CommandStats = new Map();
  const info = await admin.info('commandstats');
  for (const [, name, calls, usec] of info.matchAll(/^cmdstat_(\S+?):calls=(\d+),usec=(\d+)/gm)) {
    stats.set(name as string, { calls: Number(calls), usec: Number(usec) });
  }
  return stats;
}

/**
 * Redis CPU of the commands a client sent, between two commandstats snapshots: per command it sent,
 * the usec per call times the calls it sent. Summing every line would count a script's commands
 * twice: commandstats lists them apart, and its EVALSHA's usec includes them.
 */
function sentMicros(before: CommandStats, after: CommandStats, sent: Map<string, number>, pairs: number) {
  let usec = 0;
  for (const [command, perPair] of sent) {
    const calls = (after.get(command)?.calls ?? 0) - (before.get(command)?.calls ?? 0);
    const spent = (after.get(command)?.usec ?? 0) - (before.get(command)?.usec ?? 0);
    if (calls > 0) usec += (spent / calls) * Math.min(calls, Math.round(perPair * pairs));
  }
  return usec;
}

/** Every subject opened on the run's server; one that cannot open is written down as failed. */
async function openAll(names: Subject[], settings: Settings) {
  const open = new Map<Subject, Library>();
  const failures: Partial<Record<Subject, { failed: string }>> = {};
  for (const name of names) {
    try {
      open.set(name, await openSubject(name, settings.port));
    } catch (error) {
      failures[name] = failed(error);
    }
  }
  const opened = [...open.values()];
  /** Closes every subject, also those taken out on the way. */
  const closeAll = (): Promise<unknown> => Promise.all(opened.map(closeSoftly));
  /** Runs work for one subject; an error or a hang takes the subject out of the scenario. */
  const guard = async (
    name: Subject,
    what: string,
    work: () => Promise<void>,
    ms = 60_000,
  ): Promise<void> => {
    if (!open.has(name)) return;
    try {
      await within(ms, what, work());
    } catch (error) {
      failures[name] = failed(error);
      open.delete(name);
    }
  };
  return { open, failures, guard, closeAll };
}

/** Rotates `names` by `round`, so that no subject always goes first. */
export const rotated = <T>(names: T[], round: number): T[] =>
  names.map((_, i) => names[(i + round) % names.length] as T);

/** One uncontended lock + unlock pair's cost, in blocks of sequential pairs on one connection. */
export interface PairCost {
  /** p50 of a pair (ms), median over the blocks. */
  sequentialP50: number;
  /** Redis CPU per pair (µs): commandstats usec of the commands the client sent (see sentMicros). */
  redisMicros: number;
  /**
   * The server's CPU per pair (µs): INFO cpu (user + system of the whole redis-server process), so
   * it counts what a command costs beyond its own execution too: reading, parsing, replying.
   */
  serverMicros?: number;
  /** Client CPU per pair (µs): this process's user + system time. */
  clientMicros: number;
  /** Commands the client sent per pair (a script call counts once). */
  commands: number;
  /** Keys still in Redis right after a block of pairs, per pair (DBSIZE / pairs). */
  keysLeft: number;
}

export interface Uncontended {
  /** Lock + unlock pairs interleaved pair by pair across the subjects (order rotating). */
  latency: Partial<Record<Subject, Outcome<Latency>>>;
  cost: Partial<Record<Subject, Outcome<PairCost>>>;
}

/**
 * Lock + unlock of one key, nobody else around, every library and the SET NX + EVAL baseline side
 * by side in one process: first pair by pair in turn (latency: noise from other processes hits all
 * alike), then in blocks of sequential pairs per subject (CPU per pair, keys left), blocks
 * interleaved in rounds and summarized by their median.
 */
export async function uncontended(settings: Settings): Promise<Uncontended> {
  const turns = settings.quick ? 1_000 : 4_000;
  // Many short blocks: the median block is one that no burst of other work on the machine hit.
  const rounds = settings.quick ? 10 : 20;
  const blockPairs = settings.quick ? 100 : 250;
  const { open, failures, guard, closeAll } = await openAll(SUBJECTS, settings);
  const pairOf = (name: Subject, key: string) => async (): Promise<void> => {
    const release = await (open.get(name) as Library).lock(key);
    await release();
  };
  const samples = new Map<Subject, number[]>(SUBJECTS.map((name) => [name, []]));
  const blocks = new Map<Subject, PairCost[]>(SUBJECTS.map((name) => [name, []]));
  const sent = new Map<Subject, Map<string, number>>();
  await settings.admin.config('SET', 'slowlog-max-len', '2000');
  try {
    for (const name of SUBJECTS) {
      await guard(name, 'warm-up not finished', async () => {
        const pair = pairOf(name, 'bench:uncontended:warm');
        for (let i = 0; i < 200; i += 1) await pair();
        sent.set(name, await commandsSentPerPair(settings.admin, 20, pair));
      });
    }
    // No timer per pair here: it would be part of what is measured. A hang strands the whole run.
    const interleave = async (): Promise<void> => {
      for (let turn = 0; turn < turns; turn += 1) {
        for (const name of rotated([...open.keys()], turn)) {
          try {
            const start = now();
            await pairOf(name, 'bench:uncontended')();
            samples.get(name)?.push(now() - start);
          } catch (error) {
            failures[name] = failed(error);
            open.delete(name);
          }
        }
      }
    };
    await within(300_000, 'interleaved pairs not finished', interleave());
    for (let round = 0; round < rounds; round += 1) {
      for (const name of rotated([...open.keys()], round)) {
        await guard(name, 'not finished', async () => {
          const pair = pairOf(name, 'bench:uncontended');
          await settings.admin.flushall();
          const times: number[] = [];
          const before = await commandStats(settings.admin);
          const serverBefore = await redisCpuMs(settings.admin);
          const cpuBefore = cpuMicros();
          for (let i = 0; i < blockPairs; i += 1) {
            const start = now();
            await pair();
            times.push(now() - start);
          }
          const clientMicros = (cpuMicros() - cpuBefore) / blockPairs;
          const serverMicros = ((await redisCpuMs(settings.admin)) - serverBefore) * 1000;
          const after = await commandStats(settings.admin);
          const perPair = sent.get(name) ?? new Map<string, number>();
          blocks.get(name)?.push({
            sequentialP50: percentile(times, 50),
            redisMicros: sentMicros(before, after, perPair, blockPairs) / blockPairs,
            serverMicros: serverMicros / blockPairs,
            clientMicros,
            commands: [...perPair.values()].reduce((sum, count) => sum + count, 0),
            keysLeft: (await settings.admin.dbsize()) / blockPairs,
          });
        });
      }
    }
  } finally {
    // Redis's defaults again.
    await settings.admin.config('SET', 'slowlog-max-len', '128', 'slowlog-log-slower-than', '10000');
    await closeAll();
  }
  const latency: Uncontended['latency'] = {};
  const cost: Uncontended['cost'] = {};
  for (const name of SUBJECTS) {
    const failure = failures[name];
    const values = samples.get(name) ?? [];
    const costs = blocks.get(name) ?? [];
    latency[name] = failure ?? { p50: percentile(values, 50), p99: percentile(values, 99) };
    const mid = (pick: (cost: PairCost) => number): number => median(costs.map(pick));
    cost[name] = failure ?? {
      sequentialP50: mid((c) => c.sequentialP50),
      redisMicros: mid((c) => c.redisMicros),
      serverMicros: mid((c) => c.serverMicros ?? Number.NaN),
      clientMicros: mid((c) => c.clientMicros),
      commands: mid((c) => c.commands),
      keysLeft: mid((c) => c.keysLeft),
    };
  }
  return { latency, cost };
}

const WORKERS = 8;
const HOLD_MS = 2;
const THINK_MS = 1;

/** 8 worker processes, each with its own connections, on one lock: hold 2 ms, think 1 ms. */
export async function contended(
  name: Subject,
  settings: Settings,
  durationMs = settings.quick ? 3_000 : 10_000,
  build?: string,
): Promise<Outcome<ContentionFigures>> {
  const worker = resolve(__dirname, 'contention-worker.ts');
  const args = [name, String(settings.port), 'bench:contended', String(HOLD_MS), String(THINK_MS)];
  // Another build of rlock (see rlockOf in adapters.ts), or this checkout's.
  const env = build === undefined ? process.env : { ...process.env, RLOCK_BUILD: build };
  try {
    const redisCpu = { open: 0, close: 0 };
    const reports = await runContenders(worker, args, WORKERS, durationMs, {
      env,
      onWindow: async (edge) => (redisCpu[edge] = await redisCpuMs(settings.admin)),
    });
    const redisMs = redisCpu.close - redisCpu.open;
    const errorCount = reports.reduce((sum, report) => sum + report.errorCount, 0);
    if (errorCount > 0) {
      return { failed: `${errorCount} acquisitions failed: ${reports.flatMap((r) => r.errors)[0] ?? ''}` };
    }
    const acquisitions = reports.flatMap((report) => report.acquisitions);
    const clientMicros = reports.reduce((sum, report) => sum + report.cpuMicros, 0);
    return {
      ...contentionFigures(acquisitions, durationMs / 1000, HOLD_MS),
      clientMicrosPerAcquisition: clientMicros / Math.max(1, acquisitions.length),
      redisMicrosPerAcquisition: (redisMs * 1000) / Math.max(1, acquisitions.length),
    };
  } catch (error) {
    return failed(error);
  }
}

/** The figures of a library's median contended round, and its slowest and fastest round's acq/s. */
export type ContendedRounds = ContentionFigures & { range: [number, number] };

/**
 * The contended scenario in 3 rounds (10 s per library in all, 3 s with --quick), the libraries
 * and the hand-off floor (see handoff-floor.ts) taking turns in a rotating order, so that a machine
 * whose speed drifts over a minute (this one's does, by up to 2x) weighs on every subject alike.
 * Each subject's round of median throughput is reported whole, with the slowest and the fastest
 * round's acq/s.
 */
export async function contendedInRounds(
  settings: Settings,
  progress: (line: string) => void,
): Promise<Partial<Record<Subject, Outcome<ContendedRounds>>>> {
  const rounds = 3;
  const durationMs = Math.round((settings.quick ? 3_000 : 10_000) / rounds);
  const runs = new Map<Subject, ContentionFigures[]>();
  const outcomes: Partial<Record<Subject, Outcome<ContendedRounds>>> = {};
  for (let round = 0; round < rounds; round += 1) {
    // The hand-off floor takes its turns too: its gap is read against the libraries' of the run.
    for (const name of rotated<Subject>([...LIBRARIES, HANDOFF_FLOOR], round)) {
      if (outcomes[name]) continue;
      progress(`contended: ${LABELS[name]}, round ${round + 1}/${rounds}`);
      await settings.admin.flushall();
      const outcome = await contended(name, settings, durationMs).catch(failed);
      if ('failed' in outcome) outcomes[name] = outcome;
      else runs.set(name, [...(runs.get(name) ?? []), outcome]);
    }
  }
  for (const [name, figures] of runs) {
    if (outcomes[name]) continue;
    const byThroughput = [...figures].sort((a, b) => a.perSecond - b.perSecond);
    const middle = byThroughput[Math.floor(byThroughput.length / 2)] as ContentionFigures;
    const range: [number, number] = [
      (byThroughput[0] as ContentionFigures).perSecond,
      (byThroughput[byThroughput.length - 1] as ContentionFigures).perSecond,
    ];
    outcomes[name] = { ...middle, range };
  }
  return outcomes;
}

export interface IdleWaiters {
  /**
   * Commands per second Redis ran while 200 waiters waited for a held lock (INFO
   * total_commands_processed: the commands a script runs count one by one, like the client's).
   */
  commandsPerSecond: number;
  /** From the holder's release until every waiter had the lock once. */
  drainMs: number;
}

/**
 * How long idle waiters are watched: 3 s (2 s with --quick), or whole periods of the timer that
 * keeps them alive (one with --quick, two otherwise) where the library has one. A window shorter
 * than that timer may see no refresh at all: --quick saw 0 commands/s for 200 fair-lock waiters
 * that cost 60 every second.
 */
function idleWindowMs(lib: Library, settings: Settings): number {
  if (lib.waiterTimerMs === undefined) return settings.quick ? 2_000 : 3_000;
  return lib.waiterTimerMs * (settings.quick ? 1 : 2);
}

/** 200 waiters on a held lock for the idle window, then the release; each takes the lock once. */
export async function idleWaiters(name: LibraryName, settings: Settings): Promise<Outcome<IdleWaiters>> {
  const waiters = 200;
  const lib = await openLibrary(name, settings.port);
  const errors: string[] = [];
  try {
    const release = await lib.lock('bench:idle');
    let done = 0;
    const all = Array.from({ length: waiters }, () =>
      lib
        .lock('bench:idle')
        .then((releaseWaiter) => releaseWaiter())
        .then(
          () => (done += 1),
          (error: unknown) => errors.push(error instanceof Error ? error.message : String(error)),
        ),
    );
    await sleep(500); // every waiter has made its first attempt and settled into waiting
    const before = await commandsProcessed(settings.admin);
    const started = now();
    await sleep(idleWindowMs(lib, settings));
    const commandsPerSecond =
      ((await commandsProcessed(settings.admin)) - before - 1) / ((now() - started) / 1000);
    const releasedAt = now();
    await release();
    try {
      await within(settings.quick ? 10_000 : 30_000, `stranded ${waiters} waiters`, Promise.all(all));
    } catch {
      return { failed: `stranded ${waiters - done - errors.length} of ${waiters} waiters` };
    }
    if (errors.length > 0) return { failed: `${errors.length} of ${waiters} waiters failed: ${errors[0]}` };
    return { commandsPerSecond, drainMs: now() - releasedAt };
  } catch (error) {
    return failed(error);
  } finally {
    await closeSoftly(lib);
  }
}

export interface ManyLocks {
  locks: number;
  /** Median over the rounds. */
  opsPerSecond: number;
  /** The slowest and the fastest round's ops/s. */
  range?: [number, number];
  /** Client CPU per lock (µs), median over the rounds. */
  clientMicros?: number;
}

/**
 * 10 000 distinct locks (2 000 with --quick) acquired and released concurrently from one process;
 * the libraries take turns in rounds, each round in a fresh process of its own (see
 * many-locks-worker.ts), and each library's median round is reported.
 */
export async function manyLocks(
  settings: Settings,
): Promise<Partial<Record<LibraryName, Outcome<ManyLocks>>>> {
  const locks = settings.quick ? 2_000 : 10_000;
  // Five: the rounds of one library spread by a third on the benchmark machine.
  const rounds = settings.quick ? 3 : 5;
  const names: LibraryName[] = [...LIBRARIES];
  const runs = new Map<LibraryName, { ops: number; cpu: number }[]>(names.map((name) => [name, []]));
  const failures: Partial<Record<LibraryName, { failed: string }>> = {};
  for (let round = 0; round < rounds; round += 1) {
    for (const name of rotated(names, round)) {
      if (failures[name]) continue;
      await settings.admin.flushall();
      try {
        runs.get(name)?.push(await manyLocksRound(name, settings.port, locks));
      } catch (error) {
        failures[name] = failed(error);
      }
    }
  }
  const outcomes: Partial<Record<LibraryName, Outcome<ManyLocks>>> = {};
  for (const name of names) {
    const ops = (runs.get(name) ?? []).map((run) => run.ops);
    outcomes[name] = failures[name] ?? {
      locks,
      opsPerSecond: median(ops),
      range: [Math.min(...ops), Math.max(...ops)],
      clientMicros: median((runs.get(name) ?? []).map((run) => run.cpu)),
    };
  }
  return outcomes;
}

/** One round of `name` in a worker process: its rate and client CPU per lock. */
async function manyLocksRound(
  name: LibraryName,
  port: number,
  locks: number,
): Promise<{ ops: number; cpu: number }> {
  const child = fork(resolve(__dirname, 'many-locks-worker.ts'), [name, String(port), String(locks)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const report = new Promise<{ ops: number; cpu: number } | { error: string }>((resolveReport, reject) => {
    child.once('message', (message) => resolveReport(message as never));
    child.once('exit', (code) =>
      reject(new Error(`the round's process exited with ${code} without a report`)),
    );
  });
  try {
    const outcome = await within(120_000, 'not finished', report);
    if ('error' in outcome) throw new Error(outcome.error);
    return outcome;
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

export interface WatchdogScale {
  locks: number;
  renewalPeriodMs: number;
  commandsPerPeriod: number;
  /** Redis CPU time spent per renewal period, in ms. */
  cpuMsPerPeriod: number;
}

/** 10 000 locks held with the library's own renewal, the lease set to 3 s for every library. */
export async function watchdogAtScale(
  name: LibraryName,
  settings: Settings,
): Promise<Outcome<WatchdogScale>> {
  const locks = settings.quick ? 2_000 : 10_000;
  const leaseMs = 3_000;
  const lib: Library = await openLibrary(name, settings.port, { leaseMs });
  const releases: Array<() => Promise<void>> = [];
  try {
    await within(
      120_000,
      'could not take the locks',
      Promise.all(
        Array.from({ length: locks }, async (_, i) => {
          releases.push(await lib.holdRenewed(`bench:watchdog:${i}`));
        }),
      ),
    );
    await sleep(lib.renewalPeriodMs / 2); // renewals settle into their rhythm
    const periods = settings.quick ? 2 : 5;
    const windowMs = lib.renewalPeriodMs * periods;
    const commandsBefore = await commandsProcessed(settings.admin);
    const cpuBefore = await redisCpuMs(settings.admin);
    await sleep(windowMs);
    const commands = (await commandsProcessed(settings.admin)) - commandsBefore - 2;
    const cpu = (await redisCpuMs(settings.admin)) - cpuBefore;
    const alive = await settings.admin.exists(
      ...Array.from({ length: Math.min(locks, 1_000) }, (_, i) => `bench:watchdog:${i}`),
    );
    if (name.startsWith('rlock') || name === 'node-redisson') {
      if (alive !== Math.min(locks, 1_000))
        return { failed: `only ${alive} of the first 1000 locks still held` };
    }
    return {
      locks,
      renewalPeriodMs: lib.renewalPeriodMs,
      commandsPerPeriod: commands / periods,
      cpuMsPerPeriod: cpu / periods,
    };
  } catch (error) {
    return failed(error);
  } finally {
    await Promise.allSettled(releases.map((release) => release()));
    await closeSoftly(lib);
  }
}
