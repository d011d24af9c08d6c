/**
 * The parent's side of a contended round (see contention-loop.ts): forks the worker processes,
 * waits until every one has warmed up alone, sends them all one start (a second of competing that
 * is not counted, then the measured window) and gathers their reports.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Acquisition, Start } from './contention-loop';
import { now, sleep, within } from './clock';

export interface ContenderReport {
  /** The acquisitions made in the measured window. */
  acquisitions: Acquisition[];
  errors: string[];
  errorCount: number;
  /** The worker's CPU time in the measured window, in µs. */
  cpuMicros: number;
}

export interface ContenderOptions {
  env?: NodeJS.ProcessEnv;
  /** Called when the measured window opens, and when it closes (to read a counter of the server). */
  onWindow?: (edge: 'open' | 'close') => Promise<unknown>;
}

/** How long the workers compete, all started, before the measured window opens. */
const SHARED_WARM_UP_MS = 1_000;

/** The longest a worker may take to start and warm up alone. */
const READY_WITHIN_MS = 60_000;

/** The messages of one worker, in order, and its end: each next() resolves with the next one. */
class WorkerMessages {
  private readonly queue: unknown[] = [];
  private waiting?: { resolve(message: unknown): void; reject(error: Error): void };
  private ended?: Error;

  constructor(readonly child: ChildProcess) {
    child.on('message', (message) => {
      if (this.waiting) this.waiting.resolve(message);
      else this.queue.push(message);
      this.waiting = undefined;
    });
    // 'close', not 'exit': a message the worker sent just before it exited is delivered first.
    child.once('close', (code, signal) => {
      this.ended = new Error(`a worker ended (${signal ?? `exit code ${code}`}) without a report`);
      this.waiting?.reject(this.ended);
      this.waiting = undefined;
    });
    // Sending to a worker that is gone fails here rather than as an uncaught 'error'.
    child.on('error', () => undefined);
  }

  next(): Promise<unknown> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift());
    if (this.ended) return Promise.reject(this.ended);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }
}

/**
 * `count` workers running `worker` with `args`, measured for `durationMs` once all are warm; their
 * reports, in no particular order. Kills what is left of them when done.
 */
export async function runContenders(
  worker: string,
  args: string[],
  count: number,
  durationMs: number,
  { env = process.env, onWindow }: ContenderOptions = {},
): Promise<ContenderReport[]> {
  const workers = Array.from(
    { length: count },
    () =>
      new WorkerMessages(
        fork(worker, args, {
          execArgv: ['--import', 'tsx'],
          stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
          env,
        }),
      ),
  );
  try {
    const first = await within(
      READY_WITHIN_MS,
      'workers never became ready',
      Promise.all(workers.map((w) => w.next())),
    );
    const failedEarly = first.find((m) => !(m as { ready?: boolean }).ready);
    if (failedEarly) return [failedEarly as ContenderReport];
    const measureFrom = now() + SHARED_WARM_UP_MS;
    const start: Start = { measureFrom, until: measureFrom + durationMs };
    const reports = Promise.all(workers.map((w) => w.next()));
    // Awaited below, after the window: a worker that dies meanwhile must not be an unhandled rejection.
    reports.catch(() => undefined);
    for (const { child } of workers) child.send(start);
    await sleep(measureFrom - now());
    await onWindow?.('open');
    await sleep(start.until - now());
    await onWindow?.('close');
    return (await within(60_000, 'workers stranded after their window closed', reports)) as ContenderReport[];
  } finally {
    for (const { child } of workers)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
