import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** The built package, loaded by its own name the way users load it (npm test builds it first). */
const root = resolve(__dirname, '..');

function run(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();
}

describe('package entry points', () => {
  beforeAll(() => {
    if (!existsSync(resolve(root, 'dist', 'index.cjs'))) {
      throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
    }
  });

  test('require("rlock") gives the CommonJS build', () => {
    expect(
      run([
        '-e',
        "const r = require('rlock'); console.log(typeof r.LockClient, new r.LockNotHeldError('a', 'b').code)",
      ]),
    ).toBe('function ERR_LOCK_NOT_HELD');
  });

  test('import from "rlock" gives the ES module build', () => {
    expect(
      run([
        '--input-type=module',
        '-e',
        "import { LockClient, LockTimeoutError } from 'rlock'; console.log(typeof LockClient, new LockTimeoutError('a', 1).code)",
      ]),
    ).toBe('function ERR_LOCK_TIMEOUT');
  });

  test('rlock/opentelemetry resolves from both builds; the main entry does not load @opentelemetry/api', () => {
    expect(
      run([
        '-e',
        "const { instrument } = require('rlock/opentelemetry'); require('rlock');" +
          "const loaded = Object.keys(require.cache).filter((file) => file.includes('@opentelemetry'));" +
          'console.log(typeof instrument, loaded.length > 0)',
      ]),
    ).toBe('function true');
    expect(
      run([
        '-e',
        "require('rlock'); console.log(Object.keys(require.cache).some((file) => file.includes('@opentelemetry')))",
      ]),
    ).toBe('false');
    expect(
      run([
        '--input-type=module',
        '-e',
        "import { instrument, METRICS } from 'rlock/opentelemetry'; console.log(typeof instrument, METRICS.waitDuration)",
      ]),
    ).toBe('function rlock.lock.wait.duration');
    for (const file of ['index.mjs', 'index.cjs', 'index.d.ts', 'index.d.mts']) {
      expect(readFileSync(resolve(root, 'dist', file), 'utf8')).not.toContain('@opentelemetry');
    }
  });

  test('the built package finds its Lua scripts from both builds', () => {
    const tryOnce =
      "const RedisMock = require('ioredis-mock'); const client = new LockClient(new RedisMock());" +
      "client.getLock('x').tryLock().then(async (ok) => { console.log(ok); await client.close(); process.exit(0); });";
    expect(run(['-e', `const { LockClient } = require('rlock'); ${tryOnce}`])).toBe('true');
    expect(run(['-e', `import('rlock').then(({ LockClient }) => { ${tryOnce} });`])).toBe('true');
  });
});
