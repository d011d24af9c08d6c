/**
 * Semaphore scenarios: contended throughput with k permits over worker processes, and what idle
 * waiters cost Redis, for rlock's getSemaphore next to redis-semaphore's Semaphore.
 */
import { resolve } from 'node:path';
import { now, sleep } from './clock';
import type { Acquisition } from './contention-loop';
import { runContenders } from './contenders';
import { failed, type Outcome, type Settings } from './scenarios';
import { openSemaphore, SEMAPHORE_LABELS, SEMAPHORES, type SemaphoreName } from './semaphore-adapters';
import { percentile } from './stats';

/** Permits of the contended semaphore, worker processes, and their loop. */
export const PERMITS = 3;
const WORKERS = 8;
const HOLD_MS = 2;
const THINK_MS = 1;

export interface SemaphoreContention {
  perSecond: number;
  /** Of k / hold acquisitions per second. */
  ofIdeal: number;
  waitP50: number;
  waitP99: number;
  waitMax: number;
  /** Most permits out at once, as the workers saw them (must not exceed PERMITS). */
  mostInside: number;
}

export interface SemaphoreIdle {
  commandsPerSecond: number;
  /** From the release of every permit until each of the 200 waiters had one once. */
  drainMs: number;
}

export interface SemaphoreResults {
  contended: Partial<Record<SemaphoreName, Outcome<SemaphoreContention>>>;
  idleWaiters: Partial<Record<SemaphoreName, Outcome<SemaphoreIdle>>>;
}

function figures(all: Acquisition[], seconds: number): SemaphoreContention {
  const events = all.flatMap((a) => [
    [a.acquiredAt, 1],
    [a.releasedAt, -1],
  ]);
  // Releases first at equal times: a permit handed on in the same instant is not two inside.
  events.sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number));
  let inside = 0;
  let mostInside = 0;
  for (const [, step] of events) mostInside = Math.max(mostInside, (inside += step as number));
  const waits = all.map((a) => a.acquiredAt - a.requestedAt);
  return {
    perSecond: all.length / seconds,
    ofIdeal: all.length / seconds / ((PERMITS * 1000) / HOLD_MS),
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    waitMax: Math.max(...waits),
    mostInside,
  };
}

export async function semaphoreContended(
  name: SemaphoreName,
  settings: Settings,
): Promise<Outcome<SemaphoreContention>> {
  const durationMs = settings.quick ? 3_000 : 10_000;
  const worker = resolve(__dirname, 'semaphore-worker.ts');
  const args = [
    name,
    String(settings.port),
    'bench:semaphore',
    String(PERMITS),
    String(HOLD_MS),
    String(THINK_MS),
  ];
  try {
    const reports = await runContenders(worker, args, WORKERS, durationMs);
    const errorCount = reports.reduce((sum, report) => sum + report.errorCount, 0);
    if (errorCount > 0)
      return { failed: `${errorCount} acquisitions failed: ${reports.flatMap((r) => r.errors)[0] ?? ''}` };
    return figures(
      reports.flatMap((report) => report.acquisitions),
      durationMs / 1000,
    );
  } catch (error) {
    return failed(error);
  }
}

/** Every permit held; 200 waiters for a few seconds; then every permit released. */
export async function semaphoreIdleWaiters(
  name: SemaphoreName,
  settings: Settings,
): Promise<Outcome<SemaphoreIdle>> {
  const waiters = 200;
  const lib = await openSemaphore(name, settings.port, PERMITS);
  try {
    const held = [];
    for (let i = 0; i < PERMITS; i += 1) held.push(await lib.acquire('bench:idle-semaphore'));
    let done = 0;
    const all = Array.from({ length: waiters }, () =>
      lib.acquire('bench:idle-semaphore').then(async (release) => {
        await release();
        done += 1;
      }),
    );
    await sleep(500);
    const before = await commands(settings);
    const started = now();
    await sleep(settings.quick ? 2_000 : 3_000);
    const commandsPerSecond = ((await commands(settings)) - before - 1) / ((now() - started) / 1000);
    const releasedAt = now();
    await Promise.all(held.map((release) => release()));
    await Promise.race([
      Promise.all(all),
      sleep(30_000).then(() => {
        throw new Error(`stranded ${waiters - done} of ${waiters} waiters`);
      }),
    ]);
    return { commandsPerSecond, drainMs: now() - releasedAt };
  } catch (error) {
    return failed(error);
  } finally {
    await sleep(200);
    await lib.close().catch(() => undefined);
  }
}

async function commands(settings: Settings): Promise<number> {
  const info = await settings.admin.info('stats');
  return Number(/^total_commands_processed:(\d+)/m.exec(info)?.[1] ?? Number.NaN);
}

/** Both scenarios for each semaphore library, on a flushed server each time. */
export async function semaphores(
  settings: Settings,
  progress: (text: string) => void,
): Promise<SemaphoreResults> {
  const results: SemaphoreResults = { contended: {}, idleWaiters: {} };
  for (const name of SEMAPHORES) {
    progress(`semaphores: ${SEMAPHORE_LABELS[name]} contended`);
    await settings.admin.flushall();
    results.contended[name] = await semaphoreContended(name, settings);
    progress(`semaphores: ${SEMAPHORE_LABELS[name]} idle waiters`);
    await settings.admin.flushall();
    results.idleWaiters[name] = await semaphoreIdleWaiters(name, settings);
  }
  return results;
}

const num = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '–');

/** The semaphore tables of a run, with each figure next to redis-semaphore's. */
export function semaphoreTables(results: SemaphoreResults): string {
  const row = <T extends object>(
    outcomes: Partial<Record<SemaphoreName, Outcome<T>>>,
    columns: number,
    cells: (value: T) => string[],
  ): string[] =>
    SEMAPHORES.filter((name) => outcomes[name] !== undefined).map((name) => {
      const outcome = outcomes[name] as Outcome<T>;
      const values =
        'failed' in outcome
          ? [`**failed:** ${outcome.failed}`, ...Array(columns - 1).fill('')]
          : cells(outcome);
      return `| ${SEMAPHORE_LABELS[name]} | ${values.join(' | ')} |`;
    });
  const peer = results.contended['redis-semaphore-semaphore'];
  const peerRate = peer && !('failed' in peer) ? peer.perSecond : Number.NaN;
  return [
    `### Semaphore, contended: ${WORKERS} processes, ${PERMITS} permits, hold ${HOLD_MS} ms, think ${THINK_MS} ms`,
    '',
    '| library | acq/s | % of ideal | / redis-semaphore | wait p50 / p99 / max ms | most permits out |',
    '|---|---:|---:|---:|---:|---:|',
    ...row(results.contended, 5, (v) => [
      num(v.perSecond, 0),
      `${num(v.ofIdeal * 100, 0)}%`,
      `${num(v.perSecond / peerRate, 2)}x`,
      `${num(v.waitP50, 1)} / ${num(v.waitP99, 1)} / ${num(v.waitMax, 0)}`,
      String(v.mostInside),
    ]),
    '',
    `### Semaphore, idle waiters: ${PERMITS} permits held, 200 waiters, then every permit released`,
    '',
    '| library | Redis commands/s while waiting | drain all 200 after release, ms |',
    '|---|---:|---:|',
    ...row(results.idleWaiters, 2, (v) => [num(v.commandsPerSecond, 0), num(v.drainMs, 0)]),
  ].join('\n');
}
