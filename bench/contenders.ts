/**
 * The parent's side of a contended round (see contention-loop.ts): forks the worker processes,
 * waits until every one has warmed up alone, starts them at once (a second of shared warm-up,
 * then the measured window) and gathers their reports.
 */
import { fork } from 'node:child_process';
import type { Acquisition, Start } from './contention-loop';
import { now, sleep, within } from './clock';

export interface ContenderReport {
  acquisitions: Acquisition[];
  errors: string[];
  errorCount: number;
  cpuMicros: number;
}

/** How long every worker competes on the warm-up key before the measured window opens. */
const SHARED_WARM_UP_MS = 1_000;

/** The longest a worker may take to start and warm up alone. */
const READY_WITHIN_MS = 60_000;

export interface ContenderOptions {
  env?: NodeJS.ProcessEnv;
  /** Called when the measured window opens (to read a counter of the server, say). */
  onMeasureFrom?: () => Promise<unknown>;
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
  { env = process.env, onMeasureFrom }: ContenderOptions = {},
): Promise<ContenderReport[]> {
  const children = Array.from({ length: count }, () =>
    fork(worker, args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env }),
  );
  try {
    const exited = (child: (typeof children)[number]) =>
      new Promise<never>((_, reject) =>
        child.once('exit', (code) => reject(new Error(`a worker exited with ${code} without a report`))),
      );
    const message = (child: (typeof children)[number]) =>
      Promise.race([
        new Promise<unknown>((resolveMessage) => child.once('message', resolveMessage)),
        exited(child),
      ]);
    const first = await within(
      READY_WITHIN_MS,
      'workers never became ready',
      Promise.all(children.map(message)),
    );
    const failedEarly = first.find((m) => !(m as { ready?: boolean }).ready);
    if (failedEarly) return [failedEarly as ContenderReport];
    const reports = Promise.all(children.map(message));
    // Awaited below, after the warm-up: a worker that dies meanwhile must not be an unhandled rejection.
    reports.catch(() => undefined);
    const measureFrom = now() + SHARED_WARM_UP_MS;
    const start: Start = { measureFrom, until: measureFrom + durationMs };
    for (const child of children) child.send(start);
    await sleep(measureFrom - now());
    await onMeasureFrom?.();
    return (await within(
      SHARED_WARM_UP_MS + durationMs + 60_000,
      'workers stranded',
      reports,
    )) as ContenderReport[];
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}
