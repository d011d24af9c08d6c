import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import type Redis from 'ioredis';
import { openLibrary, type Library, type LibraryName } from './adapters';
import { now, sleep } from './clock';
import type { Acquisition } from './contention-worker';
import { contentionFigures, percentile, type ContentionFigures } from './stats';

/** What a scenario measured for one library, or why it could not. */
export type Outcome<T> = T | { failed: string };

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

/** Runs `work` with a deadline; past it the scenario is written down as stranded. */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} after ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
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

/** Lock + unlock of one key, nobody else around. */
export async function uncontended(name: LibraryName, settings: Settings): Promise<Outcome<Latency>> {
  const lib = await openLibrary(name, settings.port);
  try {
    return await within(
      60_000,
      'not finished',
      sampleLatency(settings.quick ? 1_000 : 5_000, async () => {
        const release = await lib.lock('bench:uncontended');
        await release();
      }),
    );
  } catch (error) {
    return failed(error);
  } finally {
    await closeSoftly(lib);
  }
}

const WORKERS = 8;
const HOLD_MS = 2;
const THINK_MS = 1;

/** 8 worker processes, each with its own connections, on one lock: hold 2 ms, think 1 ms. */
export async function contended(name: LibraryName, settings: Settings): Promise<Outcome<ContentionFigures>> {
  const durationMs = settings.quick ? 3_000 : 10_000;
  const worker = resolve(__dirname, 'contention-worker.ts');
  const results = Array.from({ length: WORKERS }, () => {
    const child = fork(
      worker,
      [name, String(settings.port), 'bench:contended', String(durationMs), String(HOLD_MS), String(THINK_MS)],
      { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
    );
    const report = new Promise<{ acquisitions: Acquisition[]; errors: string[]; errorCount: number }>(
      (resolveReport, reject) => {
        child.once('message', (message) => resolveReport(message as never));
        child.once('exit', (code) => reject(new Error(`a worker exited with ${code} without a report`)));
      },
    );
    return { child, report };
  });
  try {
    const reports = await within(
      durationMs + 60_000,
      'workers stranded',
      Promise.all(results.map((result) => result.report)),
    );
    const errorCount = reports.reduce((sum, report) => sum + report.errorCount, 0);
    if (errorCount > 0) {
      return { failed: `${errorCount} acquisitions failed: ${reports.flatMap((r) => r.errors)[0] ?? ''}` };
    }
    return contentionFigures(
      reports.flatMap((report) => report.acquisitions),
      durationMs / 1000,
      HOLD_MS,
    );
  } catch (error) {
    return failed(error);
  } finally {
    for (const { child } of results) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

export interface IdleWaiters {
  /** Commands per second Redis ran while 200 waiters waited for a held lock. */
  commandsPerSecond: number;
  /** From the holder's release until every waiter had the lock once. */
  drainMs: number;
}

/** 200 waiters on a held lock for 3 s (2 s with --quick), then the release; each takes the lock once. */
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
    await sleep(settings.quick ? 2_000 : 3_000);
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
  opsPerSecond: number;
}

/** 10 000 distinct locks acquired and released concurrently from one process. */
export async function manyLocks(name: LibraryName, settings: Settings): Promise<Outcome<ManyLocks>> {
  const locks = settings.quick ? 2_000 : 10_000;
  const lib = await openLibrary(name, settings.port);
  try {
    const started = now();
    await within(
      120_000,
      'not finished',
      Promise.all(
        Array.from({ length: locks }, async (_, i) => {
          const release = await lib.lock(`bench:many:${i}`);
          await release();
        }),
      ),
    );
    return { locks, opsPerSecond: locks / ((now() - started) / 1000) };
  } catch (error) {
    return failed(error);
  } finally {
    await closeSoftly(lib);
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
