import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { createUserProject, type UserProject } from '../scripts/user-project';
import { startRedis, type RedisServer } from './helpers/redis-server';

/**
 * Apps shipped as one bundled file (esbuild, ncc, a Lambda zip) carry no package folders: the
 * built package must work from inside the bundle, whatever folder the bundle runs in.
 */
const APP = `
async function main() {
  const redis = new Redis(process.env.REDIS_URL);
  const client = new LockClient(redis);
  const lock = client.getLock('bundled:order');
  const acquired = await lock.tryLock();
  const holdCount = await lock.getHoldCount();
  await lock.unlock();
  // An app logs what went wrong by its name: a minifier must not turn it into another.
  const errorName = await lock.unlock().then(() => 'none', (error) => error.name);
  console.log(JSON.stringify({ acquired, holdCount, lockedAfterUnlock: await lock.isLocked(), errorName }));
  await client.close();
  redis.disconnect();
}
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

let server: RedisServer;
let project: UserProject;
let runDir: string;

beforeAll(async () => {
  server = await startRedis();
  project = createUserProject();
  runDir = mkdtempSync(join(tmpdir(), 'rlock-bundle-'));
});

afterAll(async () => {
  project.remove();
  rmSync(runDir, { recursive: true, force: true });
  await server.stop();
});

test.each([
  {
    build: 'index.mjs',
    file: 'app.ts',
    imports: "import { Redis } from 'ioredis';\nimport { LockClient } from 'rlock';",
    minify: false,
  },
  {
    build: 'index.cjs',
    file: 'app.cts',
    imports: "const { Redis } = require('ioredis');\nconst { LockClient } = require('rlock');",
    minify: false,
  },
  {
    build: 'index.mjs',
    file: 'app.ts',
    imports: "import { Redis } from 'ioredis';\nimport { LockClient } from 'rlock';",
    minify: true,
  },
])(
  'an esbuild bundle (minified: $minify) of an app using dist/$build takes and releases a lock from any folder',
  async (app) => {
    writeFileSync(join(project.dir, app.file), `${app.imports}\n${APP}`);
    const outfile = join(project.dir, `${app.file}.bundle.cjs`);
    const { metafile } = await build({
      entryPoints: [join(project.dir, app.file)],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      outfile,
      minify: app.minify,
      metafile: true,
      logLevel: 'silent',
    });
    const bundled = Object.keys(metafile.inputs).map((input) => resolve(input));
    expect(bundled).toContain(resolve(__dirname, '..', 'dist', app.build));

    // Alone in a folder of its own: no node_modules, no lua/ beside it.
    const bundle = join(runDir, `${app.build}${app.minify ? '.min' : ''}.cjs`);
    copyFileSync(outfile, bundle);
    const { stdout } = await promisify(execFile)(process.execPath, [bundle], {
      cwd: runDir,
      env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${server.port}` },
      timeout: 20_000,
    });
    expect(JSON.parse(stdout)).toEqual({
      acquired: true,
      holdCount: 1,
      lockedAfterUnlock: false,
      errorName: 'LockNotHeldError',
    });
    const redis = server.connect();
    expect(await redis.exists('bundled:order')).toBe(0);
  },
  60_000,
);
