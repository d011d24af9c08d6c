/**
 * `npm run bench:handoff [-- <build> ...] [--rounds N] [--processes P]`: where the time of one
 * contended hand-off goes. P processes (default 2) take turns on one lock (hold 2 ms, think 1 ms, so
 * one always waits), noting each step on the monotonic clock they share; every hand-off (a release
 * with another process waiting) is split into:
 *   release call -> on the socket   the releasing client's work before the script goes out
 *   on the socket -> message read   Redis runs the release script and delivers its message
 *   message read -> body starts     the woken client's work (for getLock, its attempt's round trip too)
 * medians in µs and in PINGs of the same run, for getLock and getFairLock of each build (default:
 * this checkout; a git revision or a dist folder as for bench:compare), and once for the floor of
 * a direct hand-off (bench/handoff-floor.ts), whose steps are what the machine itself takes. `--cpu-prof <folder>` writes
 * a V8 CPU profile of every worker there.
 */
import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import { startRedis } from '../__tests__/helpers/redis-server';
import { distOf } from './builds';
import { pingLatency } from './scenarios';
import { median } from './stats';
import type { HandoffTimes } from './handoff-worker';

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

const profileIndex = process.argv.indexOf('--cpu-prof');
const profiles = profileIndex >= 0 ? resolve(process.argv[profileIndex + 1] as string) : undefined;

const SUBJECTS: Record<string, string> = {
  floor: 'floor of a direct hand-off',
  rlock: 'getLock',
  'rlock-fair': 'getFairLock',
};

interface WorkerReport {
  times: HandoffTimes[];
  cpuMicros: number;
}

function runProcesses(
  port: number,
  kind: string,
  rounds: number,
  processes: number,
  dist?: string,
): Promise<WorkerReport[]> {
  const worker = resolve(__dirname, 'handoff-worker.ts');
  const key = `bench:handoff:${kind}:${Math.random()}`;
  return Promise.all(
    Array.from({ length: processes }).map(
      () =>
        new Promise<WorkerReport>((done, fail) => {
          const child = fork(worker, [kind, String(port), key, String(rounds)], {
            execArgv: ['--import', 'tsx', ...(profiles ? ['--cpu-prof', '--cpu-prof-dir', profiles] : [])],
            stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
            env: dist === undefined ? process.env : { ...process.env, RLOCK_BUILD: dist },
          });
          child.once('message', (report) => done(report as WorkerReport));
          child.once('exit', (code) => fail(new Error(`a worker exited with ${code}`)));
        }),
    ),
  );
}

interface Split {
  prepare: number[];
  redis: number[];
  wake: number[];
  gap: number[];
}

/**
 * Every hand-off: a release followed by the acquisition it made way for, by a process that was
 * waiting when it began (the first acquisition after it, in any other process).
 */
function splits(processes: HandoffTimes[][]): Split {
  const split: Split = { prepare: [], redis: [], wake: [], gap: [] };
  const acquisitions = processes
    .flatMap((times, process) => times.map((t) => ({ ...t, process })))
    .sort((a, b) => a.acquiredAt - b.acquiredAt);
  for (const [process, mine] of processes.entries()) {
    for (const release of mine) {
      const next = acquisitions.find((t) => t.acquiredAt > release.releaseCalledAt);
      if (!next || next.process === process || next.requestedAt >= release.releaseCalledAt) continue;
      if (next.acquiredAt - release.releaseCalledAt > 50) continue;
      split.gap.push(next.acquiredAt - release.releaseCalledAt);
      split.prepare.push(release.releaseSentAt - release.releaseCalledAt);
      if (next.messageAt !== undefined && next.messageAt >= release.releaseSentAt) {
        split.redis.push(next.messageAt - release.releaseSentAt);
        split.wake.push(next.acquiredAt - next.messageAt);
      }
    }
  }
  return split;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const builds = args.filter((arg, i) => !arg.startsWith('--') && !(args[i - 1] ?? '').startsWith('--'));
  const rounds = option('--rounds', 1_000);
  const processes = option('--processes', 2);
  const server = await startRedis();
  const admin = server.connect();
  try {
    const ping = (await pingLatency({ port: server.port, admin, quick: false })).p50;
    const rows: string[] = [
      `PING p50 ${(ping * 1000).toFixed(0)} µs; ${processes} processes, ${rounds} acquisitions each; medians in µs (PINGs)`,
      '',
      '| lock | build | hand-offs | release call → on the socket | on the socket → message read | message read → body starts | gap | client CPU µs per acquisition |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
    ];
    for (const build of builds.length ? builds : ['.']) {
      const { label, dist } = distOf(build);
      // The floor once, with the first build: it does not depend on the build.
      const kinds = build === (builds[0] ?? '.') ? ['floor', 'rlock', 'rlock-fair'] : ['rlock', 'rlock-fair'];
      for (const kind of kinds) {
        await admin.flushall();
        const reports = await runProcesses(server.port, kind, rounds, processes, dist);
        const split = splits(reports.map((report) => report.times));
        const cpu = reports.reduce((sum, report) => sum + report.cpuMicros, 0) / (processes * rounds);
        const cell = (values: number[]): string => {
          const ms = median(values);
          return `${(ms * 1000).toFixed(0)} (${(ms / ping).toFixed(1)})`;
        };
        rows.push(
          `| ${SUBJECTS[kind]} | ${kind === 'floor' ? '' : label} | ${split.gap.length} | ${cell(split.prepare)} | ${cell(split.redis)} | ${cell(split.wake)} | ${cell(split.gap)} | ${cpu.toFixed(0)} |`,
        );
      }
    }
    console.log(rows.join('\n'));
  } finally {
    admin.disconnect();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
