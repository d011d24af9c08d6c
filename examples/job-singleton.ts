/**
 * A scheduled job that runs on exactly one of several worker processes at a time.
 *
 * Every worker wakes up on the same schedule (each JOB_INTERVAL_MS) and tries the job's lock once,
 * without waiting: the worker that gets it runs the job, the others skip the round.
 *
 * - A crash does not block the job: the lock has no fixed lease, the watchdog renews it while the
 *   worker lives (every third of watchdogTimeout). A worker killed mid-job stops renewing, its lock
 *   ends within watchdogTimeout, and a later round runs on another worker.
 * - A lost lease stops the work: the job checks `held.signal` between its steps, and the signal
 *   aborts when the lease is gone (renewal refused, Redis unreachable until the lease ran out, the
 *   client closing), so the job stops instead of running on unprotected.
 * - Once per round: under the lock the job records the round it ran, so a worker whose timer fires
 *   late does not run the same round again after another worker finished it.
 * - On SIGTERM or SIGINT the worker closes its client: a running job's signal aborts, the job stops
 *   at its next step, and the lock is released at once for the other workers.
 *
 * Run two or three workers, each in its own terminal, then `kill -9` the one running the job:
 *   REDIS_URL=redis://localhost:6379 npx tsx examples/job-singleton.ts
 * Settings: JOB_NAME (report), JOB_INTERVAL_MS (5000), JOB_STEPS (10), JOB_STEP_MS (500),
 *           WATCHDOG_TIMEOUT_MS (10000), WORKER_ID (worker-<pid>).
 *
 * Workers that should queue for the job rather than skip a round would wait instead:
 * `withLock(job, { waitTime })`, on `client.getFairLock(name)` to take turns in arrival order.
 */
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { ClientClosedError, LockClient, LockLostError, LockTimeoutError } from 'rlock';

/** What the job's work gets for one round. */
export interface JobRun {
  round: number;
  /** Aborts when the lock is lost or the worker stops: stop working. */
  signal: AbortSignal;
  log: (line: string) => void;
}

export interface JobOptions {
  redisUrl: string;
  /** The job: its lock is `job:<name>`. */
  name?: string;
  /** One round every `interval` ms, on every worker. */
  interval?: number;
  /** The lease the watchdog keeps renewing; how long a crashed worker can hold up the job. */
  watchdogTimeout?: number;
  workerId?: string;
  /** The job's work; the default counts through `steps` steps of `stepTime` ms. */
  work?: (run: JobRun) => Promise<void>;
  steps?: number;
  stepTime?: number;
  log?: (line: string) => void;
}

export interface JobWorker {
  /** Stops scheduling; a running round's signal aborts; its lock is released; connections close. */
  stop(): Promise<void>;
}

export function start(options: JobOptions): JobWorker {
  const {
    redisUrl,
    name = 'report',
    interval = 5_000,
    watchdogTimeout = 10_000,
    workerId = `worker-${process.pid}`,
    steps = 10,
    stepTime = 500,
  } = options;
  const log = (line: string): void => (options.log ?? console.log)(`[${workerId}] ${line}`);
  const work =
    options.work ??
    (async ({ signal }: JobRun): Promise<void> => {
      for (let step = 1; step <= steps; step += 1) {
        signal.throwIfAborted(); // between steps: stop if the lock is gone
        await sleep(stepTime, undefined, { signal });
        log(`step ${step} of ${steps}`);
      }
    });

  const redis = new Redis(redisUrl);
  redis.on('error', (error: Error) => log(`redis: ${error.message}`));
  const client = new LockClient(redis, { watchdogTimeout, clientId: workerId });
  client.on('lockLost', ({ name: lock, code }) => log(`lost ${lock} (${code})`));

  const lastRoundKey = `job:${name}:last-round`;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function runRound(round: number): Promise<void> {
    try {
      // waitTime 0: one attempt, no waiting; LockTimeoutError when another worker has it.
      await client.getLock(`job:${name}`).withLock(
        async ({ signal }) => {
          if (Number((await redis.get(lastRoundKey)) ?? -1) >= round) {
            log(`round ${round}: already done on another worker`);
            return;
          }
          log(`round ${round}: running`);
          await work({ round, signal, log });
          await redis.set(lastRoundKey, round, 'PX', 10 * interval);
          log(`round ${round}: done`);
        },
        { waitTime: 0 },
      );
    } catch (error) {
      if (error instanceof LockTimeoutError) {
        log(`round ${round}: running on another worker; skipped`);
      } else if (
        error instanceof ClientClosedError ||
        (error instanceof LockLostError && error.lostCode === 'client-closed')
      ) {
        log(`round ${round}: stopped, the worker is shutting down`);
      } else if (error instanceof LockLostError) {
        log(`round ${round}: stopped, the lock was lost (${error.lostCode})`);
      } else {
        log(`round ${round}: failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** Wakes at the next multiple of `interval`, the same moment on every worker. */
  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(
      () => {
        const round = Math.floor(Date.now() / interval);
        if (running) {
          log(`round ${round}: the previous round still runs here; skipped`);
        } else {
          running = runRound(round).finally(() => (running = undefined));
        }
        schedule();
      },
      interval - (Date.now() % interval),
    );
  }
  schedule();
  log(`waiting for rounds every ${interval} ms`);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      // Aborts a running round's signal, gives it 2 s to stop, then releases what is still held.
      await client.close({ timeout: 2_000 });
      await running;
      await redis.quit();
      log('stopped');
    },
  };
}

/** A worker as a program: settings from the environment, stops on SIGTERM and SIGINT. */
export function main(env: NodeJS.ProcessEnv = process.env): void {
  const number = (value: string | undefined, fallback: number): number =>
    value === undefined || value === '' ? fallback : Number(value);
  const worker = start({
    redisUrl: env.REDIS_URL ?? 'redis://localhost:6379',
    name: env.JOB_NAME || undefined,
    interval: number(env.JOB_INTERVAL_MS, 5_000),
    steps: number(env.JOB_STEPS, 10),
    stepTime: number(env.JOB_STEP_MS, 500),
    watchdogTimeout: number(env.WATCHDOG_TIMEOUT_MS, 10_000),
    workerId: env.WORKER_ID || undefined,
  });
  const stop = (): void => {
    worker.stop().catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

// Run when started as a program (tsx, node), not when imported.
if (basename(process.argv[1] ?? '').replace(/\.[cm]?[jt]s$/, '') === 'job-singleton') {
  main();
}
