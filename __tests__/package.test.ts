import { execFile, execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { promisify } from 'node:util';
import { LockClient } from '../src';
import { startRedis, type RedisServer } from './helpers/redis-server';

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

/**
 * The tarball `npm pack` makes, installed into a new app the way a user installs it: with ioredis 5
 * and with ioredis 6 (the two majors of the peer range), where npm must resolve without ERESOLVE
 * and without a warning, and the package must take locks, wait for them and run its command.
 */
describe('the package as installed', () => {
  let scratch: string;
  let tarball: string;
  let packed: string[];
  let server: RedisServer;

  /** npm for the scratch app: none of the npm_* settings that `npm test` passes down (its prefix). */
  const npm = (args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
    return promisify(execFile)('npm', args, { cwd, env, timeout: 120_000 });
  };

  beforeAll(async () => {
    if (!existsSync(resolve(root, 'dist', 'cli.cjs'))) {
      throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
    }
    scratch = mkdtempSync(join(tmpdir(), 'rlock-installed-'));
    // dist/ is built already; packing without scripts leaves it alone while other files use it.
    const { stdout } = await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], root);
    const [report] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = join(scratch, (report as { filename: string }).filename);
    packed = (report as { files: Array<{ path: string }> }).files.map((file) => file.path);
    server = await startRedis();
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('every relative link of the packed README and docs leads to a packed file', () => {
    expect(packed).toEqual(
      expect.arrayContaining(['README.md', 'docs/operations.md', 'examples/http-orders.ts']),
    );
    expect(packed.filter((file) => /^(src|lua|__tests__|bench|scripts)\/|^docs\/api\//.test(file))).toEqual(
      [],
    );
    const broken: string[] = [];
    for (const file of packed.filter((path) => path.endsWith('.md'))) {
      const text = readFileSync(resolve(root, file), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const path = (target as string).split('#')[0] as string;
        if (path === '' || /^[a-z][a-z+.-]*:/i.test(path)) continue; // an anchor, or a web address
        const linked = posix.normalize(posix.join(posix.dirname(file), path)).replace(/\/$/, '');
        if (!packed.some((entry) => entry === linked || entry.startsWith(`${linked}/`))) {
          broken.push(`${file} -> ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test("the packed package.json builds before packing, not on the user's install", () => {
    const manifest = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8'));
    expect(manifest.scripts.prepack).toBe('npm run build');
    for (const script of ['prepare', 'preinstall', 'install', 'postinstall']) {
      expect(manifest.scripts[script]).toBeUndefined();
    }
    expect(manifest.peerDependencies.ioredis).toBe('^5.0.0 || ^6.0.0');
  });

  test.each([
    ['5', 'ioredis'],
    ['6', 'ioredis-6'],
  ])(
    'an app on ioredis %s installs it without a warning; locks, waits and the rlock command work',
    async (major, devCopy) => {
      // The version the repository tests against, from npm's cache when it is there.
      const version = JSON.parse(
        readFileSync(resolve(root, 'node_modules', devCopy, 'package.json'), 'utf8'),
      ).version;
      expect(version.split('.')[0]).toBe(major);
      const app = join(scratch, `app-ioredis-${major}`);
      mkdirSync(app);
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify({ name: 'app', private: true, type: 'module' }),
      );
      const installed = await npm(
        ['install', tarball, `ioredis@${version}`, '--no-audit', '--no-fund', '--prefer-offline'],
        app,
      );
      expect(installed.stderr).not.toMatch(/npm (warn|error)|ERESOLVE/i);

      writeFileSync(join(app, 'app.js'), INSTALLED_APP);
      const { stdout } = await promisify(execFile)(process.execPath, ['app.js'], {
        cwd: app,
        env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${server.port}` },
        timeout: 20_000,
      });
      expect(JSON.parse(stdout)).toEqual({
        ioredis: version,
        acquired: true,
        holdCount: 1,
        waiterGotIt: true,
        fairWaiterGotIt: true,
        freeAfter: false,
      });

      // The command, run from the app's node_modules/.bin with the app's ioredis.
      const holder = new LockClient(server.connect());
      try {
        await holder.getLock('installed:held').lock();
        const inspected = await promisify(execFile)(
          join(app, 'node_modules', '.bin', 'rlock'),
          ['inspect', 'installed:held', '--redis', `redis://127.0.0.1:${server.port}`, '--json'],
          { cwd: app, timeout: 20_000 },
        );
        expect(JSON.parse(inspected.stdout)).toMatchObject({ kinds: ['lock'], holders: [{ holds: 1 }] });
      } finally {
        await holder.close();
      }

      if (major === '6') {
        // A TypeScript app type-checks against ioredis 6's declarations too.
        writeFileSync(join(app, 'typed.ts'), TYPED_APP);
        const types = join(app, 'node_modules', '@types', 'node');
        mkdirSync(dirname(types), { recursive: true });
        symlinkSync(resolve(root, 'node_modules', '@types', 'node'), types, 'dir');
        const tsc = resolve(root, 'node_modules', 'typescript', 'bin', 'tsc');
        const args = [
          '--noEmit',
          '--strict',
          '--module',
          'nodenext',
          '--target',
          'es2022',
          '--types',
          'node',
        ];
        await promisify(execFile)(process.execPath, [tsc, ...args, 'typed.ts'], {
          cwd: app,
          timeout: 60_000,
        });
      }
    },
    120_000,
  );
});

/** An app of a user: a lock, a waiter woken by its release, the same for a fair lock. */
const INSTALLED_APP = `
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { LockClient } from 'rlock';

const url = process.env.REDIS_URL;
const [first, second] = [new LockClient(new Redis(url)), new LockClient(new Redis(url))];
const lock = first.getLock('installed:order');
const acquired = await lock.tryLock();
const holdCount = await lock.getHoldCount();
const waiter = second.getLock('installed:order');
const waiting = waiter.tryLock(5_000);
setTimeout(() => void lock.unlock(), 100);
const waiterGotIt = await waiting;
await waiter.unlock();
const fair = first.getFairLock('installed:fair');
await fair.lock();
const fairWaiter = second.getFairLock('installed:fair');
const fairWaiting = fairWaiter.tryLock(5_000);
setTimeout(() => void fair.unlock(), 100);
const fairWaiterGotIt = await fairWaiting;
await fairWaiter.unlock();
const freeAfter = await lock.isLocked();
const ioredis = createRequire(import.meta.url)('ioredis/package.json').version;
console.log(JSON.stringify({ ioredis, acquired, holdCount, waiterGotIt, fairWaiterGotIt, freeAfter }));
await Promise.all([first.close(), second.close()]);
process.exit(0);
`;

/** The connections a TypeScript app hands to LockClient: a Redis, a Cluster, a subscriber. */
const TYPED_APP = `
import { Cluster, Redis } from 'ioredis';
import { LockClient, type NotAcquiredEvent } from 'rlock';

const client = new LockClient(new Redis({ lazyConnect: true }), { subscriber: new Redis({ lazyConnect: true }) });
const cluster = new LockClient(new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true }));
client.on('notAcquired', (event: NotAcquiredEvent) => console.log(event.error?.message));
export { client, cluster };
`;
