import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const root = resolve(__dirname, '..');

// `npm run demo` is the first thing a newcomer runs: it must work with no Redis server at all.
test('the demo runs its whole timeline on the embedded in-memory Redis', async () => {
  const env = { ...process.env };
  delete env.REDIS_URL;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/demo.ts'], {
    cwd: root,
    env,
    timeout: 60_000,
  });
  expect(stdout).toMatch(/embedded in-memory Redis/);
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
}, 60_000);
