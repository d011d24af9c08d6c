/**
 * Builds src/lua.generated.ts: the text of every script in lua/, with its `--@include` lines
 * resolved, as a TypeScript module. lua/ stays the source; the module puts the scripts inside the
 * JavaScript, so a bundle of an app (esbuild, ncc, a Lambda zip) needs no files beside it.
 *
 * `npm run build:lua` writes it; build, typecheck, the demo, the benchmarks and every Jest run do
 * so first. It is not committed.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';

const root = resolve(__dirname, '..');
export const LUA_DIR = join(root, 'lua');
/** Helpers that scripts include; not scripts of their own. */
const INCLUDE_DIR = 'include';
export const LUA_MODULE = join(root, 'src', 'lua.generated.ts');

/** A script's text with every `--@include <file>` line replaced by that file (paths from lua/). */
function readLua(luaDir: string, file: string, includedBy?: string): string {
  let text: string;
  try {
    text = readFileSync(join(luaDir, file), 'utf8');
  } catch (error) {
    const where = includedBy === undefined ? '' : `, included by lua/${includedBy}`;
    throw new Error(`cannot read lua/${file}${where}: ${(error as Error).message}`);
  }
  return text.replace(/^--@include (\S+)$/gm, (_, included: string) => readLua(luaDir, included, file));
}

/** Every script under lua/ by its path there (`/` separators); include/ holds helpers only. */
export function readScripts(luaDir = LUA_DIR): Record<string, string> {
  const files = readdirSync(luaDir, { recursive: true, encoding: 'utf8' })
    .map((file) => file.split(sep).join('/'))
    .filter((file) => file.endsWith('.lua') && !file.startsWith(`${INCLUDE_DIR}/`))
    .sort();
  return Object.fromEntries(files.map((file) => [file, readLua(luaDir, file)]));
}

export function renderLuaModule(): string {
  const entries = Object.entries(readScripts()).map(
    ([file, lua]) => `  ${JSON.stringify(file)}: ${JSON.stringify(lua)},`,
  );
  return [
    '// Generated from lua/ by scripts/lua-module.ts (npm run build:lua). Edit the .lua files, not this.',
    '',
    '/** Every script in lua/, keyed by its path there, with its `--@include` lines resolved. */',
    'export const LUA_SCRIPTS: Readonly<Record<string, string>> = {',
    ...entries,
    '};',
    '',
  ].join('\n');
}

/** Writes the module when its text changed (an unchanged file keeps the tools' caches warm). */
export function writeLuaModule(): void {
  const text = renderLuaModule();
  if (!existsSync(LUA_MODULE) || readFileSync(LUA_MODULE, 'utf8') !== text) writeFileSync(LUA_MODULE, text);
}

if (require.main === module) writeLuaModule();
