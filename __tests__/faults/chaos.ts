/**
 * `npm run chaos -- --seconds N`: 8 worker processes take one fenced lock again and again while
 * faults are injected at random: a worker killed (and replaced), a worker stopped past its lease
 * and resumed, the subscriber or command connections killed, Redis paused, the script cache
 * flushed. Reports acquisitions, faults, overlaps caught by fencing tokens, lost-lease signals
 * and the longest stall. Redis keeps its data throughout, so overlaps by holders that were not
 * stopped must be 0.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { startRedis } from '../helpers/redis-server';
import { holderIds } from '../helpers/holders';

const secondsIndex = process.argv.indexOf('--seconds');
const seconds = secondsIndex >= 0 ? Number(process.argv[secondsIndex + 1]) : 30;
if (!Number.isFinite(seconds) || seconds <= 0) throw new RangeError('--seconds must be a positive number');

const sleep = (ms: number): Promise<void> => new Promise((resolvePromise) => setTimeout(resolvePromise, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

async function main(): Promise<void> {
  const server = await startRedis();
  const admin = server.connect();
  const spawnWorker = (): ChildProcess =>
    fork(resolve(__dirname, 'chaos-worker.ts'), [String(server.port)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
  const workers = Array.from({ length: 8 }, spawnWorker);
  const faults: Record<string, number> = {};
  const count = (fault: string): void => {
    faults[fault] = (faults[fault] ?? 0) + 1;
  };
  const injections: Record<string, () => Promise<void>> = {
    'worker killed (SIGKILL) and replaced': async () => {
      const index = Math.floor(Math.random() * workers.length);
      workers[index]?.kill('SIGKILL');
      workers[index] = spawnWorker();
    },
    'holder stopped 1.5 s (lease 1 s), then resumed': async () => {
      // Stop whichever worker holds the lock right now, when one does.
      const [owner] = await holderIds(admin, 'chaos');
      const pid = owner ? await admin.hget('chaos:pids', owner.slice(0, owner.lastIndexOf(':'))) : null;
      const worker = workers.find((candidate) => candidate.pid === Number(pid)) ?? pick(workers);
      worker.kill('SIGSTOP');
      setTimeout(() => worker.kill('SIGCONT'), 1_500);
    },
    'subscriber connections killed': async () => {
      await admin.client('KILL', 'TYPE', 'pubsub');
    },
    'command connections killed': async () => {
      await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    },
    'Redis paused 300 ms (CLIENT PAUSE WRITE)': async () => {
      await admin.client('PAUSE', 300, 'WRITE');
    },
    'script cache flushed': async () => {
      await admin.script('FLUSH');
    },
  };
  const until = Date.now() + seconds * 1_000;
  process.stderr.write(`[chaos] ${seconds} s, 8 workers, faults every 0.3-0.8 s\n`);
  while (Date.now() < until) {
    await sleep(300 + Math.random() * 500);
    const name = pick(Object.keys(injections));
    await (injections[name] as () => Promise<void>)().catch(() => undefined);
    count(name);
  }
  await sleep(2_000); // let stopped workers resume and finish their writes
  const store = await admin.hgetall('chaos:store');
  for (const worker of workers) {
    worker.kill('SIGCONT');
    worker.kill('SIGKILL');
  }
  await server.stop();

  const figure = (field: string): number => Number(store[field] ?? 0);
  const report = {
    seconds,
    acquisitions: figure('acquisitions'),
    storeWrites: figure('writes'),
    faultsInjected: faults,
    overlapsCaughtByFencing: figure('refusedAfterPause') + figure('refusedUnpaused'),
    overlapsByHoldersNotStopped: figure('refusedUnpaused'),
    lostLeaseSignals: figure('lostLeaseSignals'),
    failedWaits: figure('errors'),
    longestStallMs: figure('longestStall'),
  };
  console.log(JSON.stringify(report, null, 2));
  if (report.overlapsByHoldersNotStopped > 0) {
    console.error('FAILED: holders that were never stopped overlapped');
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
