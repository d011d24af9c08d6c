import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * The test helpers leave nothing running after a test file ends: anything ref'd (a timer, a
 * socket, a child process) keeps Jest's worker process alive past the end of the run, and Jest
 * then kills it with "A worker process has failed to exit gracefully".
 */
test('a process whose server was killed under a live connection exits as soon as it stops it', async () => {
  const child = spawn(process.execPath, [
    '--import',
    'tsx',
    resolve(__dirname, 'workers', 'killed-server-worker.ts'),
  ]);
  let stoppedAt = 0;
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes('stopped')) stoppedAt ||= performance.now();
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  expect({ code, output }).toEqual({ code: 0, output: 'stopped\n' });
  // ioredis' disconnect() of a connection still reconnecting used to keep the process 2 s more.
  expect(performance.now() - stoppedAt).toBeLessThan(1_000);
});
