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
