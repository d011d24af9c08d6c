import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LUA_DIR, readScripts } from '../scripts/lua-module';
import { LUA_SCRIPTS } from '../src/lua.generated';

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
