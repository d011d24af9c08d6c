import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { dropUnusedHelpers, LUA_DIR, readScripts, withoutCommentLines } from '../../scripts/lua-module';
import { LUA_SCRIPTS } from '../../src/protocol/lua.generated';

/** A lua/ folder of its own, from { path: text }. */
function luaFolder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rlock-lua-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

test('the generated module holds every script in lua/, and only scripts', () => {
  const scripts = readdirSync(LUA_DIR, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.lua') && !file.startsWith('include'))
    .sort();
  expect(Object.keys(LUA_SCRIPTS).sort()).toEqual(scripts);
  expect(LUA_SCRIPTS).toEqual(readScripts());
});

test('includes are pasted in place, nested ones too', () => {
  const dir = luaFolder({
    'lock/acquire.lua': 'local a = 1\n--@include include/outer.lua\nreturn a\n',
    'include/outer.lua': '--@include include/inner.lua\nlocal outer = 2\n',
    'include/inner.lua': 'local inner = 3\n',
  });
  try {
    expect(readScripts(dir)).toEqual({
      'lock/acquire.lua': 'local a = 1\nlocal inner = 3\n\nlocal outer = 2\n\nreturn a\n',
    });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('a missing include names the script that wants it', () => {
  const dir = luaFolder({ 'lock/acquire.lua': '--@include include/gone.lua\n' });
  try {
    expect(() => readScripts(dir)).toThrow(
      /cannot read lua\/include\/gone\.lua, included by lua\/lock\/acquire\.lua/,
    );
  } finally {
    rmSync(dir, { recursive: true });
  }
});

describe('included helpers a script never calls are left out', () => {
  const helpers = [
    '-- Reads.',
    'local function read(key)',
    "  return redis.call('get', key)",
    'end',
    '',
    '-- Reads twice, through read.',
    'local function read_twice(key)',
    '  return read(key), read(key)',
    'end',
    '',
    '-- Never called.',
    'local function unused(key)',
    "  return redis.call('del', key)",
    'end',
    '',
  ].join('\n');

  test('a helper the script calls stays, with the helpers it calls', () => {
    const script = `${helpers}-- unused(KEYS[1]) is named in a comment only\nreturn read_twice(KEYS[1])\n`;
    const kept = dropUnusedHelpers(script);
    expect(kept).toContain('local function read(key)');
    expect(kept).toContain('local function read_twice(key)');
    expect(kept).not.toContain('unused(key)');
    expect(kept).not.toContain('-- Never called.');
    expect(kept).toContain('-- unused(KEYS[1]) is named in a comment only');
  });

  test('a script that calls none keeps none, and its own code as it was', () => {
    expect(dropUnusedHelpers(`${helpers}return 1\n`)).toBe('\n\nreturn 1\n');
  });

  test('every helper an included file defines is defined where a script calls it', () => {
    // A helper left out by mistake would fail only when its script runs: check every script here.
    for (const [file, lua] of Object.entries(readScripts())) {
      const defined = new Set([...lua.matchAll(/^local function (\w+)\(/gm)].map((match) => match[1]));
      const code = lua.replace(/--\[\[[^]*?\]\]|--.*$/gm, '');
      for (const [, name] of code.matchAll(/(?<![\w.:])([a-z_]+)\(/g)) {
        if (LUA_BUILTINS.has(name as string)) continue;
        expect({ file, name, defined: defined.has(name) }).toEqual({ file, name, defined: true });
      }
    }
  });
});

describe('scripts go out without their comment lines', () => {
  test('comment lines are emptied in place; code, and a comment after code, stay', () => {
    const text = [
      '--[[',
      '  What the script does.',
      ']]',
      '-- Why this line.',
      "local a = redis.call('get', KEYS[1]) -- kept: it follows code",
      '  -- indented',
      "return a .. '--'",
      '',
    ].join('\n');
    expect(withoutCommentLines(text)).toBe(
      [
        '',
        '',
        '',
        '',
        "local a = redis.call('get', KEYS[1]) -- kept: it follows code",
        '',
        "return a .. '--'",
        '',
      ].join('\n'),
    );
  });

  test.each([
    ['a block comment and code on one line', '--[[ KEYS[1] the lock ]] local limit = 5\nreturn limit\n'],
    ['a block comment with level signs', '--[==[\n  header\n]==]\nreturn 1\n'],
    ['an indented block comment', '  --[[\n  inner\n  ]]\nreturn 1\n'],
    ['a long string', 'local text = [[\n-- not a comment\n]]\nreturn text\n'],
  ])('a shape it cannot strip safely stops the build: %s', (_, text) => {
    expect(() => withoutCommentLines(text, 'lua/x.lua')).toThrow(
      /^lua\/x\.lua, line \d+: .*cannot strip comments/,
    );
  });

  test('a block comment ends at the first line that is only its closing brackets', () => {
    // A closing line with a trailing space still closes it; a code line ending in "]]" does not.
    const text = '--[[\n  KEYS[1] the lock\n]] \nlocal v = ARGV[KEYS[2]]\nreturn v\n';
    expect(withoutCommentLines(text)).toBe('\n\n\nlocal v = ARGV[KEYS[2]]\nreturn v\n');
  });

  test('no script sent carries a comment line, and all are a third of their text with comments', () => {
    for (const [file, lua] of Object.entries(LUA_SCRIPTS)) {
      expect({ file, commentLines: lua.split('\n').filter((line) => /^\s*--/.test(line)) }).toEqual({
        file,
        commentLines: [],
      });
    }
    // Every test that runs a script checks that it still parses; here, that the text went (301 KB with them).
    const total = Object.values(LUA_SCRIPTS).reduce((sum, lua) => sum + lua.length, 0);
    expect(total).toBeLessThan(120_000);
  });
});

/** Names before a `(` that are not helpers: Lua's keywords and the functions every script has. */
const LUA_BUILTINS = new Set(
  ['and', 'or', 'not', 'return', 'if', 'elseif', 'while', 'until', 'in', 'function', 'local'].concat([
    'tonumber',
    'tostring',
    'type',
    'ipairs',
    'pairs',
    'unpack',
    'select',
    'error',
    'next',
  ]),
);
