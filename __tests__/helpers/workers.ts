import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const workerFile = (name: string): string => resolve(__dirname, '..', 'workers', `${name}.ts`);

/** In the ioredis-6 project (RLOCK_TEST_IOREDIS=6) a worker loads ioredis 6, as the test files do. */
const IOREDIS_ARGS =
  process.env.RLOCK_TEST_IOREDIS === '6'
    ? ['--import', pathToFileURL(resolve(__dirname, 'ioredis-6-loader.mjs')).href]
    : [];

/** Every worker this test file started and that has not exited yet. */
const running = new Set<ChildProcess>();

// A worker left running (a test that failed half-way, a worker still waiting for a message) would
// keep Jest's own worker process alive after its last test file: Jest then kills it and warns.
if (typeof afterAll === 'function') {
  afterAll(() => {
    for (const child of running) child.kill('SIGKILL');
  });
}

export interface Worker {
  child: ChildProcess;
  /** The worker's first message ('locked', 'started', 'done', or 'error: ...'). */
  firstMessage: Promise<string>;
  /** Its messages after the first, one per call. */
  nextMessage(): Promise<string>;
}

/**
 * Starts a worker process (TypeScript run through tsx): workers/lock-worker.ts, or another file of
 * workers/ by name.
 */
export function startWorker(
  args: string[],
  env: Record<string, string> = {},
  worker = 'lock-worker',
): Worker {
  const child = fork(workerFile(worker), args, {
    execArgv: [...IOREDIS_ARGS, '--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const queued: string[] = [];
  const takers: Array<(message: string) => void> = [];
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before reporting`)));
  });
  exited.catch(() => undefined);
  child.on('message', (message) => {
    const taker = takers.shift();
    if (taker) taker(String(message));
    else queued.push(String(message));
  });
  const nextMessage = (): Promise<string> => {
    const message = queued.shift();
    if (message !== undefined) return Promise.resolve(message);
    return Promise.race([new Promise<string>((resolveMessage) => takers.push(resolveMessage)), exited]);
  };
  return { child, firstMessage: nextMessage(), nextMessage };
}
