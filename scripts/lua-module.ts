/**
 * Builds src/protocol/lua.generated.ts: the text of every script in lua/, with its `--@include` lines
 * resolved, the included helpers it does not call left out and its comment lines emptied, as a
 * TypeScript module. lua/ stays the source; the module puts the scripts inside the JavaScript, so a
 * bundle of an app (esbuild, ncc, a Lambda zip) needs no files beside it.
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
export const LUA_MODULE = join(root, 'src', 'protocol', 'lua.generated.ts');

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

/**
 * A helper as an include file defines it: the comment lines right above it, `local function
 * <name>(`, and its body up to the first `end` at the start of a line (the helpers' own code is
 * indented, so that `end` is the function's).
 */
const HELPER = /(?:^--(?!\[\[).*\n)*^local function (\w+)\([^]*?^end\n/gm;

/** The text with its Lua comments removed: a name in a comment is no use of it. */
const withoutComments = (text: string): string => text.replace(/--\[\[[^]*?\]\]|--.*$/gm, '');

/**
 * The script without the included helpers it never calls. Lua makes a closure of every `local
 * function` on every run of a script, and an include defines several: a script that called two of
 * an include's seven paid for seven (about 450 Redis instructions each, `npm run bench:steps --
 * --instructions`). A helper stays when the script's own code, or a helper that stays, names it.
 */
export function dropUnusedHelpers(text: string): string {
  const helpers = new Map([...text.matchAll(HELPER)].map((match) => [match[1] as string, match[0]]));
  const namedIn = (code: string): string[] =>
    [...helpers.keys()].filter((name) => new RegExp(`\\b${name}\\b`).test(withoutComments(code)));
  const kept = new Set(namedIn(text.replace(HELPER, '')));
  for (const name of kept) for (const used of namedIn(helpers.get(name) as string)) kept.add(used);
  return text.replace(HELPER, (helper, name: string) => (kept.has(name) ? helper : ''));
}

/**
 * The script as it is shipped and sent: without its comment lines. The comments were two thirds of
 * the text (all scripts 301 KB, 98 KB without; fair/acquire.lua 23 KB, 9 KB), which every copy of
 * the package carries twice (its CommonJS and ES module builds), which Redis keeps in its script
 * cache, and which a connection sends once per script whenever the server lacks it (fresh,
 * restarted, failed over, SCRIPT FLUSH). A comment's lines stay, empty, so the code keeps its line
 * numbers. A comment after code on its line stays too: telling one from a `--` inside a string
 * would take a Lua lexer.
 *
 * Only the shapes lua/ uses are understood: a block comment is `--[[` alone on its line up to `]]`
 * alone on its line, and no script has a long string (`[[ ... ]]`). Anything else (a one-line
 * `--[[ ... ]]`, `--[==[`, an indented block) could cut code or leave a comment's words as code, so
 * it stops the build instead.
 */
export function withoutCommentLines(text: string, file = 'the script'): string {
  const blocks = /^--\[\[[ \t]*\n[^]*?^\]\][ \t]*$/gm;
  const withoutBlocks = text.replace(blocks, (block) => '\n'.repeat(block.split('\n').length - 1));
  const odd = /--\[=*\[|\[=*\[/.exec(withoutBlocks);
  if (odd) {
    const line = withoutBlocks.slice(0, odd.index).split('\n').length;
    throw new Error(
      `${file}, line ${line}: "${odd[0]}" outside a block comment of the form "--[[" ... "]]", each alone ` +
        'on its line; the build cannot strip comments from it safely',
    );
  }
  return withoutBlocks.replace(/^[ \t]*--.*$/gm, '');
}

/** Every script under lua/ by its path there (`/` separators); include/ holds helpers only. */
export function readScripts(luaDir = LUA_DIR): Record<string, string> {
  const files = readdirSync(luaDir, { recursive: true, encoding: 'utf8' })
    .map((file) => file.split(sep).join('/'))
    .filter((file) => file.endsWith('.lua') && !file.startsWith(`${INCLUDE_DIR}/`))
    .sort();
  return Object.fromEntries(
    files.map((file) => [file, withoutCommentLines(dropUnusedHelpers(readLua(luaDir, file)), `lua/${file}`)]),
  );
}

export function renderLuaModule(): string {
  const entries = Object.entries(readScripts()).map(
    ([file, lua]) => `  ${JSON.stringify(file)}: ${JSON.stringify(lua)},`,
  );
  return [
    '// Generated from lua/ by scripts/lua-module.ts (npm run build:lua). Edit the .lua files, not this.',
    '',
    '/** Every script in lua/, keyed by its path there, with its `--@include` lines resolved and its comment lines emptied. */',
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
