import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { useRedis } from './helpers/setup';

const WORKER = resolve(__dirname, 'workers', 'debug-worker.ts');

/** Runs the debug worker with `env` added; resolves with what it wrote. */
function runWorker(port: number, env: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, String(port)], {
      env: { ...process.env, NODE_DEBUG: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolveRun({ stdout, stderr });
      else reject(new Error(`debug worker exited with ${code}: ${stderr}`));
    });
  });
}

describe('NODE_DEBUG=rlock', () => {
  const redis = useRedis();

  test('logs each step of a contended acquisition to stderr', async () => {
    const { stdout, stderr } = await runWorker(redis.port(), { NODE_DEBUG: 'rlock' });
    expect(stdout).toBe('done\n');
    const lines = stderr.split('\n').filter((line) => line.startsWith('RLOCK '));
    const expected = [
      /lock debugged: acquire by \S+ \(lease -1\)/,
      /lock debugged: attempt \(first\) by \S+: acquired/,
      /lock debugged: acquired by \S+ after [\d.]+ ms$/,
      /lock debugged: attempt \(first\) by \S+: \d+/,
      // The client's own channel, where a release that wakes it is heard.
      /subscribe rlock_client__channel:\{/,
      /lock debugged: \S+ waits up to \d+ ms/,
      /renew 1 lock\(s\): debugged/,
      /lock debugged: released by \S+ after [\d.]+ ms \(free\)/,
      /lock debugged: \S+ woke \(message\)/,
      /lock debugged: acquired by \S+ after [\d.]+ ms \(contended\)/,
    ];
    for (const pattern of expected) expect(lines.some((line) => pattern.test(line))).toBe(true);
    // In the order they happened.
    const firstIndex = (pattern: RegExp): number => lines.findIndex((line) => pattern.test(line));
    const order = expected.map(firstIndex);
    expect(order[1]).toBeLessThan(order[3] as number);
    expect(order[7]).toBeLessThan(order[8] as number);
    expect(order[8]).toBeLessThan(order[9] as number);
  }, 60_000);

  test('writes nothing without it', async () => {
    const { stdout, stderr } = await runWorker(redis.port(), {});
    expect(stdout).toBe('done\n');
    expect(stderr).not.toMatch(/RLOCK/);
  }, 60_000);
});
