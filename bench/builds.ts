/**
 * Builds of rlock to measure side by side (bench:compare, bench:handoff): a git revision, built once
 * into a worktree under the system's temp folder with this checkout's node_modules; a folder
 * holding a built index.cjs; or `.`, this checkout, built first.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(__dirname, '..');

const git = (...args: string[]): string => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

/** The dist/ folder of a build: a folder as given, this checkout built, or a revision built apart. */
export function distOf(build: string): { label: string; dist: string | undefined } {
  if (build === '.') {
    execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'ignore' });
    return { label: 'this checkout', dist: undefined };
  }
  if (existsSync(join(build, 'index.cjs'))) return { label: build, dist: resolve(build) };
  const sha = git('rev-parse', '--short', `${build}^{commit}`);
  const tree = join(tmpdir(), 'rlock-builds', sha);
  if (!existsSync(join(tree, 'dist', 'index.cjs'))) {
    process.stderr.write(`[compare] building ${build} (${sha}) in ${tree}\n`);
    mkdirSync(join(tmpdir(), 'rlock-builds'), { recursive: true });
    if (!existsSync(tree)) git('worktree', 'add', '--detach', '-f', tree, sha);
    if (!existsSync(join(tree, 'node_modules')))
      symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'));
    execFileSync('npm', ['run', 'build'], { cwd: tree, stdio: 'ignore' });
  }
  return { label: `${build} (${sha})`, dist: join(tree, 'dist') };
}
