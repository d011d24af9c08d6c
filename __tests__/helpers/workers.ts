import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

const WORKER = resolve(__dirname, '..', 'workers', 'lock-worker.ts');

/** Starts a lock worker process (TypeScript run through tsx) and resolves with its first message. */
export function startWorker(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; firstMessage: Promise<string> } {
  const child = fork(WORKER, args, {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const firstMessage = new Promise<string>((resolvePromise, reject) => {
    child.once('message', (message) => resolvePromise(String(message)));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before reporting`)));
  });
  return { child, firstMessage };
}
