import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis } from './helpers/redis-server';

const root = resolve(__dirname, '..');

/** Runs `npm run demo`'s script; it rejects unless the demo exits by itself, with status 0, in time. */
async function runDemo(redisUrl?: string): Promise<string> {
  const env = { ...process.env };
  delete env.REDIS_URL;
  if (redisUrl) env.REDIS_URL = redisUrl;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/demo.ts'], {
    cwd: root,
    env,
    timeout: 45_000,
  });
  return stdout;
}

function expectWholeTimeline(stdout: string): void {
  expect(stdout).toMatch(/re-entered stock:sku-7, hold count 2/);
  expect(stdout).toMatch(/still working, ttl \d+ ms/);
  expect(stdout).toMatch(/unlock refused: ERR_LOCK_NOT_HELD/);
  expect(stdout).toMatch(/woken and holding job:emails \d+ ms after the release/);
  expect(stdout).toMatch(/demo finished/);
  // The three workers never hold orders:42 at once.
  const events = stdout.split('\n').filter((line) => /worker-\d\s+(holds|releases) orders:42/.test(line));
  expect(events).toHaveLength(6);
  for (let i = 0; i < events.length; i += 2) {
    expect(events[i]).toMatch(/holds/);
    expect(events[i + 1]).toMatch(/releases/);
  }
}

// `npm run demo` is the first thing a newcomer runs: it must work with no Redis server at all.
test('the demo runs its whole timeline on the embedded in-memory Redis', async () => {
  const stdout = await runDemo();
  expect(stdout).toMatch(/embedded in-memory Redis/);
  expectWholeTimeline(stdout);
}, 60_000);

test('with REDIS_URL the demo runs on that server and exits by itself', async () => {
  const server = await startRedis();
  try {
    const url = `redis://127.0.0.1:${server.port}`;
    const stdout = await runDemo(url);
    expect(stdout).toMatch(`rlock demo on Redis at ${url}`);
    expectWholeTimeline(stdout);
  } finally {
    await server.stop();
  }
}, 60_000);
