/**
 * `npm run bench [-- --quick]`: rlock and the libraries people would otherwise pick, side by side on
 * one fresh redis-server, in one run. Prints a table, writes bench/results/<timestamp>.json and
 * regenerates docs/benchmarks.md with its charts.
 *
 * `npm run bench -- --check [--quick]`: only the scenarios the targets need (bench/targets.ts);
 * prints each target with its figure and exits 1 when one is missed. Writes nothing.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem, type } from 'node:os';
import { resolve } from 'node:path';
import { startRedis } from '../__tests__/helpers/redis-server';
import { LABELS, LIBRARIES, type LibraryName } from './adapters';
import { charts, headline, markdown, tables, targetsTable, type Results } from './report';
import {
  contendedInRounds,
  idleWaiters,
  manyLocks,
  pingLatency,
  uncontended,
  watchdogAtScale,
  type Outcome,
  type Settings,
} from './scenarios';
import { semaphores, semaphoreTables } from './semaphore-scenarios';
import { judge } from './targets';

const quick = process.argv.includes('--quick');
const check = process.argv.includes('--check');
/** `--only <scenario>` runs one scenario and writes nothing (for working on one figure). */
const onlyIndex = process.argv.indexOf('--only');
const only = onlyIndex >= 0 ? process.argv[onlyIndex + 1] : undefined;
const SCENARIOS = [
  'uncontended',
  'contended',
  'idle waiters',
  'many locks',
  'watchdog at scale',
  'semaphores',
];
if (onlyIndex >= 0 && !SCENARIOS.some((title) => only !== undefined && title.startsWith(only))) {
  console.error(`--only: no scenario starts with "${only ?? ''}"; the scenarios: ${SCENARIOS.join(', ')}`);
  process.exit(2);
}
const root = resolve(__dirname, '..');

function progress(text: string): void {
  process.stderr.write(`\r\x1b[K[bench] ${text}`);
}

type Scenario<T> = (name: LibraryName, settings: Settings) => Promise<Outcome<T>>;

/** Whether a scenario runs: all by default, one with --only, those the targets need with --check. */
function runs(title: string): boolean {
  if (only) return title.startsWith(only);
  return !check || ['uncontended', 'contended', 'idle waiters', 'many locks'].includes(title);
}

async function eachLibrary<T>(
  title: string,
  scenario: Scenario<T>,
  settings: Settings,
): Promise<Partial<Record<LibraryName, Outcome<T>>>> {
  const outcomes: Partial<Record<LibraryName, Outcome<T>>> = {};
  if (!runs(title)) return outcomes;
  for (const [i, name] of LIBRARIES.entries()) {
    progress(`${title}: ${LABELS[name]} (${i + 1}/${LIBRARIES.length})`);
    await settings.admin.flushall();
    try {
      outcomes[name] = await scenario(name, settings);
    } catch (error) {
      outcomes[name] = { failed: error instanceof Error ? error.message : String(error) };
    }
  }
  return outcomes;
}

/** docs/benchmarks.md and its charts, from one run's results. */
function writeReport(results: Results): void {
  writeFileSync(resolve(root, 'docs', 'benchmarks.md'), markdown(results));
  for (const [name, svg] of Object.entries(charts(results))) writeFileSync(resolve(root, 'docs', name), svg);
}

async function main(): Promise<void> {
  // `--report <results.json>` regenerates the docs from a saved run without measuring again.
  const reportIndex = process.argv.indexOf('--report');
  if (reportIndex >= 0) {
    writeReport(JSON.parse(readFileSync(process.argv[reportIndex + 1] as string, 'utf8')) as Results);
    console.log('report: docs/benchmarks.md');
    return;
  }
  const server = await startRedis();
  const admin = server.connect();
  const settings: Settings = { port: server.port, admin, quick };
  try {
    progress('baseline: PING');
    const ping = await pingLatency(settings);
    const redisVersion = /redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? '?';
    const results: Results = {
      date: new Date().toISOString(),
      quick,
      machine: {
        cpu: cpus()[0]?.model.trim() ?? '?',
        cores: cpus().length,
        memoryGiB: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        redis: redisVersion,
        os: `${type()} ${release()}`,
      },
      ping,
      uncontended: {},
      contended: {},
      idleWaiters: {},
      manyLocks: {},
      watchdog: {},
    };
    if (runs('uncontended')) {
      progress('uncontended: every library and SET NX + EVAL, side by side');
      const { latency, cost } = await uncontended(settings);
      results.uncontended = latency;
      results.pairCost = cost;
    }
    if (runs('contended')) results.contended = await contendedInRounds(settings, progress);
    results.idleWaiters = await eachLibrary('idle waiters', idleWaiters, settings);
    if (runs('many locks')) {
      progress('many locks: the libraries in turns');
      results.manyLocks = await manyLocks(settings);
    }
    results.watchdog = await eachLibrary('watchdog at scale', watchdogAtScale, settings);
    if (runs('semaphores')) results.semaphores = await semaphores(settings, progress);
    progress('done\n');

    console.log(`\n${tables(results)}\n\n${headline(results).join('\n')}\n`);
    if (results.semaphores) console.log(`${semaphoreTables(results.semaphores)}\n`);
    console.log(`Targets:\n\n${targetsTable(results)}\n`);
    if (check) {
      const missed = judge(results).filter((verdict) => !verdict.pass);
      // A target its floor misses too is still missed: the floor only says why.
      const outOfReach = missed.filter((verdict) => verdict.floorPasses === false).length;
      console.log(
        missed.length === 0
          ? 'check: every target met'
          : `check: ${missed.length} target(s) missed` +
              (outOfReach > 0 ? `, ${outOfReach} of them missed by the floor of the same run too` : ''),
      );
      process.exitCode = missed.length === 0 ? 0 : 1;
      return;
    }
    if (only) return;
    const resultsDir = resolve(root, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const file = resolve(resultsDir, `${results.date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    writeReport(results);
    console.log(`results: ${file}\nreport: docs/benchmarks.md`);
  } finally {
    await server.stop();
  }
}

// A library that leaves a promise rejecting after it was closed must not end the whole run.
const stray: string[] = [];
process.on('unhandledRejection', (error) => stray.push(String(error)));
process.on('uncaughtException', (error) => stray.push(String(error)));
process.on('exit', () => {
  if (stray.length > 0)
    console.error(`(${stray.length} errors surfaced outside the measured calls: ${stray[0]})`);
});

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
