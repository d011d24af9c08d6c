import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkSnippets, documentedSnippets, extractSnippets } from '../scripts/snippets';
import { createUserProject } from '../scripts/user-project';
import { startRedis } from './helpers/redis-server';

// What README.md and docs/ show must compile and run as written (against the built package:
// npm test builds it first).

test('every TypeScript block in README.md and docs/ compiles in a strict nodenext project', () => {
  const snippets = documentedSnippets();
  expect(snippets.length).toBeGreaterThan(5);
  expect(checkSnippets(snippets)).toEqual([]);
}, 60_000);

test('a block that does not compile is reported at its line in the Markdown file', () => {
  const markdown = [
    '# Title',
    '',
    '```sh',
    'npm test',
    '```',
    '',
    '```ts',
    "import { LockClient } from 'rlock';",
    "const count: number = new LockClient(null as never).getLock('a');",
    '```',
  ].join('\n');
  const snippets = extractSnippets('docs/example.md', markdown);
  expect(snippets).toEqual([
    { file: 'docs/example.md', line: 8, heading: 'Title', code: expect.any(String) },
  ]);
  expect(checkSnippets(snippets)).toEqual([
    expect.stringMatching(/^docs\/example\.md:9:7 TS2322: Type 'RLock' is not assignable to type 'number'/),
  ]);
}, 60_000);

test('the Quick start runs as written against a Redis server and exits by itself', async () => {
  const [quickStart] = documentedSnippets().filter(
    (snippet) => snippet.file === 'README.md' && snippet.heading === 'Quick start',
  );
  if (!quickStart) throw new Error('README.md has no ```ts block under "## Quick start"');
  const server = await startRedis();
  const project = createUserProject();
  try {
    writeFileSync(join(project.dir, 'quickstart.ts'), quickStart.code);
    const tsx = require.resolve('tsx/cli');
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [tsx, 'quickstart.ts'], {
      cwd: project.dir,
      env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${server.port}` },
      timeout: 20_000,
    });
    expect(stderr).toBe('');
    expect(stdout).toBe('charged order 42\nreserved sku-7\n');
    expect(await server.connect().exists('order:42', 'stock:sku-7')).toBe(0); // both released
  } finally {
    project.remove();
    await server.stop();
  }
}, 60_000);

/**
 * What a block of docs/deployments.md leaves for the reader to supply (its `declare` lines),
 * supplied: three masters from the environment, and the application's functions, which say what
 * they were called with.
 */
const DEPLOYMENT_APP = `
const [urlA, urlB, urlC] = (process.env.REDIS_URLS ?? '').split(' ');
const from = 'alice', to = 'bob', amount = 5;
async function move(from: string, to: string, amount: number): Promise<void> {
  console.log(\`moved \${amount} from \${from} to \${to}\`);
}
async function buildReport(): Promise<void> {
  console.log('report built');
}
`;

test.each([
  ['MultiLock', 'getMultiLock', 'moved 5 from alice to bob\n'],
  ['RedLock', 'getRedLock', 'report built\n'],
])(
  'the %s of docs/deployments.md runs as written over independent masters',
  async (_kind, factory, output) => {
    const block = documentedSnippets().find(
      (snippet) => snippet.file === 'docs/deployments.md' && snippet.code.includes(`.${factory}(`),
    );
    if (!block) throw new Error(`docs/deployments.md has no \`\`\`ts block calling ${factory}`);
    const code = block.code
      .split('\n')
      .filter((line) => !line.startsWith('declare '))
      .join('\n');
    const servers = await Promise.all([startRedis(), startRedis(), startRedis()]);
    const project = createUserProject();
    try {
      // The block ends holding nothing, with its clients still connected: the program exits a
      // moment later (a RedLock's unlock() answers on a majority; the last release may be out).
      const exit = 'setTimeout(() => process.exit(0), 300);';
      writeFileSync(join(project.dir, 'deployment.ts'), `${DEPLOYMENT_APP}\n${code}\n${exit}\n`);
      const tsx = require.resolve('tsx/cli');
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [tsx, 'deployment.ts'], {
        cwd: project.dir,
        env: {
          ...process.env,
          REDIS_URLS: servers.map((server) => `redis://127.0.0.1:${server.port}`).join(' '),
        },
        timeout: 20_000,
      });
      expect(stderr).toBe('');
      expect(stdout).toBe(output);
      // Every member released: no key left on any master.
      // Every member released on every master.
      const lockNames = ['account:alice', 'account:bob', 'report:nightly'];
      const left = await Promise.all(servers.map((server) => server.connect().exists(...lockNames)));
      expect(left).toEqual([0, 0, 0]);
    } finally {
      project.remove();
      await Promise.all(servers.map((server) => server.stop()));
    }
  },
  60_000,
);
