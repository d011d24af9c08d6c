import './fengari-config';
import { createHash } from 'node:crypto';
import { lauxlib, lua, lualib, to_luastring } from 'fengari';
import { Status, type Reply } from './commands';
import { ReplyError } from './store';

/**
 * Runs rlock's scripts as Redis 7 does, in fengari. What Lua 5.3 in fengari does differently from
 * Redis' Lua 5.1, shimmed here:
 * - numbers: 5.1 has doubles only; fengari has 32-bit integers, so epoch ms times 1000 would wrap.
 *   `tonumber` answers floats and replies come in as floats, which keeps every computation in
 *   doubles as in 5.1 (the remaining integers are literals, lengths and loop counters, all small);
 * - `unpack` is 5.1's global;
 * - replies convert as Redis converts them: nil -> false, status -> {ok=...}, error -> {err=...}
 *   (raised by redis.call, returned by redis.pcall); a script's number truncates to an integer,
 *   true is 1, false is nil, a table stops at its first nil;
 * - errors read as Redis 7 writes them: "<error> script: <sha>, on @user_script:<line>.".
 */

/** What a script's redis.call reaches: the server the script runs on. */
export type CommandRunner = (name: string, args: string[]) => Reply;

const PRELUDE = `
unpack = table.unpack
local raw_tonumber = tonumber
tonumber = function(...)
  local n = raw_tonumber(...)
  if n == nil then return nil end
  return n + 0.0
end
redis = {
  call = __redis_call,
  pcall = __redis_pcall,
  error_reply = function(message) return { err = message } end,
  status_reply = function(message) return { ok = message } end,
  replicate_commands = function() return true end,
  setresp = function() end,
  log = function() end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
}
__redis_call = nil
__redis_pcall = nil
`;

const ERR = to_luastring('err');
const OK = to_luastring('ok');
const LINE = to_luastring('line');
const KEYS = to_luastring('KEYS');
const ARGV = to_luastring('ARGV');
const CHUNK = to_luastring('@user_script');
const WHERE = to_luastring('Sl');

/**
 * Redis strings are bytes. Inside the simulated server a string holds one byte per character
 * (latin1: see bytes.ts), and so do Lua strings here, both ways, so that a script that builds
 * binary values keeps every byte (fengari's own conversions go through UTF-8 and would not).
 */
function toLua(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i += 1) bytes[i] = text.charCodeAt(i) & 0xff;
  return bytes;
}

function fromLua(L: object, idx: number): string {
  return Buffer.from(lua.lua_tolstring(L, idx)).toString('latin1');
}

/** SHA1 of a script's bytes (a latin1 string, as the server keeps it), as Redis names scripts. */
export function sha1(text: string): string {
  return createHash('sha1').update(text, 'latin1').digest('hex');
}

/** The line of the innermost Lua function running now (0 when none). */
function scriptLine(L: object): number {
  const ar = new lua.lua_Debug();
  for (let level = 0; lua.lua_getstack(L, level, ar); level += 1) {
    lua.lua_getinfo(L, WHERE, ar);
    if (ar.currentline > 0) return ar.currentline;
  }
  return 0;
}

function formatArgNumber(L: object, idx: number): string {
  if (lua.lua_isinteger(L, idx)) return String(lua.lua_tointeger(L, idx));
  const n = lua.lua_tonumber(L, idx);
  // Redis writes a number argument as its shortest exact text (fpconv_dtoa): 2 -> "2", 0.5 -> "0.5".
  return String(n);
}

function pushReply(L: object, reply: Reply): void {
  if (reply === null) lua.lua_pushboolean(L, false);
  else if (typeof reply === 'number') lua.lua_pushnumber(L, reply);
  else if (typeof reply === 'string') lua.lua_pushstring(L, toLua(reply));
  else if (reply instanceof Status) {
    lua.lua_createtable(L, 0, 1);
    lua.lua_pushstring(L, toLua(reply.text));
    lua.lua_setfield(L, -2, OK);
  } else {
    lua.lua_createtable(L, reply.length, 0);
    reply.forEach((item, i) => {
      pushReply(L, item);
      lua.lua_rawseti(L, -2, i + 1);
    });
  }
}

function pushError(L: object, message: string, line?: number): void {
  lua.lua_createtable(L, 0, 2);
  lua.lua_pushstring(L, toLua(message));
  lua.lua_setfield(L, -2, ERR);
  if (line !== undefined) {
    lua.lua_pushnumber(L, line);
    lua.lua_setfield(L, -2, LINE);
  }
}

/** The value at `idx` as Redis would send it to the client. */
function toReply(L: object, idx: number): Reply | ReplyError {
  const type = lua.lua_type(L, idx);
  if (type === lua.LUA_TNUMBER) return Math.trunc(lua.lua_tonumber(L, idx));
  if (type === lua.LUA_TSTRING) return fromLua(L, idx);
  if (type === lua.LUA_TBOOLEAN) return lua.lua_toboolean(L, idx) ? 1 : null;
  if (type !== lua.LUA_TTABLE) return null;
  const at = idx < 0 ? lua.lua_gettop(L) + idx + 1 : idx;
  if (lua.lua_getfield(L, at, ERR) === lua.LUA_TSTRING) {
    const message = fromLua(L, -1);
    lua.lua_pop(L, 1);
    return new ReplyError(message);
  }
  lua.lua_pop(L, 1);
  if (lua.lua_getfield(L, at, OK) === lua.LUA_TSTRING) {
    const text = fromLua(L, -1);
    lua.lua_pop(L, 1);
    return new Status(text);
  }
  lua.lua_pop(L, 1);
  const items: Reply[] = [];
  for (let i = 1; ; i += 1) {
    if (lua.lua_rawgeti(L, at, i) === lua.LUA_TNIL) {
      lua.lua_pop(L, 1);
      break;
    }
    const item = toReply(L, -1);
    lua.lua_pop(L, 1);
    // An error inside an array reaches the client as an error element; rlock's scripts return none.
    items.push(item instanceof ReplyError ? item.message : item);
  }
  return items;
}

/** One Lua state for the whole process: scripts keep nothing between runs (Redis forbids globals). */
class LuaEngine {
  private readonly L: object;
  private readonly compiled = new Map<string, number>();
  private runner: CommandRunner | undefined;

  constructor() {
    const L = lauxlib.luaL_newstate();
    lualib.luaL_openlibs(L);
    this.L = L;
    const call =
      (protectedCall: boolean) =>
      (state: object): number => {
        const n = lua.lua_gettop(state);
        const args: string[] = [];
        let bad = n === 0 ? 'Please specify at least one argument for this redis lib call' : undefined;
        for (let i = 1; i <= n && bad === undefined; i += 1) {
          const type = lua.lua_type(state, i);
          if (type === lua.LUA_TSTRING) args.push(fromLua(state, i));
          else if (type === lua.LUA_TNUMBER) args.push(formatArgNumber(state, i));
          else bad = 'Lua redis lib command arguments must be strings or integers';
        }
        let reply: Reply | undefined;
        let failure = bad;
        if (failure === undefined) {
          const [name, ...rest] = args as [string, ...string[]];
          try {
            reply = (this.runner as CommandRunner)(name, rest);
          } catch (error) {
            if (!(error instanceof ReplyError)) throw error;
            failure = /^ERR unknown command/.test(error.message)
              ? 'ERR Unknown Redis command called from script'
              : error.message;
          }
        }
        lua.lua_settop(state, 0);
        if (failure !== undefined) {
          pushError(state, failure, protectedCall ? undefined : scriptLine(state));
          if (protectedCall) return 1;
          lua.lua_error(state);
        }
        pushReply(state, reply as Reply);
        return 1;
      };
    lua.lua_pushjsfunction(L, call(false));
    lua.lua_setglobal(L, to_luastring('__redis_call'));
    lua.lua_pushjsfunction(L, call(true));
    lua.lua_setglobal(L, to_luastring('__redis_pcall'));
    if (lauxlib.luaL_dostring(L, to_luastring(PRELUDE)) !== lua.LUA_OK) {
      throw new Error(`the Lua prelude failed: ${lua.lua_tojsstring(L, -1)}`);
    }
    // The message handler: notes the line an error was raised at, while the stack still shows it.
    lua.lua_pushjsfunction(L, (state) => {
      if (lua.lua_type(state, 1) === lua.LUA_TTABLE) {
        if (lua.lua_getfield(state, 1, LINE) === lua.LUA_TNIL) {
          lua.lua_pop(state, 1);
          lua.lua_pushnumber(state, scriptLine(state));
          lua.lua_setfield(state, 1, LINE);
        } else lua.lua_pop(state, 1);
        return 1;
      }
      const message = lua.lua_type(state, 1) === lua.LUA_TSTRING ? fromLua(state, 1) : 'error';
      pushError(state, `ERR ${message}`, scriptLine(state));
      return 1;
    });
    lua.lua_setglobal(L, to_luastring('__rlock_sim_handler'));
  }

  /** Compiles `text` (once per text); the compile error as Redis words it, if any. */
  compile(text: string): ReplyError | undefined {
    if (this.compiled.has(text)) return undefined;
    const { L } = this;
    if (lauxlib.luaL_loadbuffer(L, toLua(text), null, CHUNK) !== lua.LUA_OK) {
      const message = lua.lua_tojsstring(L, -1);
      lua.lua_pop(L, 1);
      return new ReplyError(`ERR Error compiling script (new function): ${message}`);
    }
    this.compiled.set(text, lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX));
    return undefined;
  }

  run(text: string, keys: string[], args: string[], runner: CommandRunner): Reply | ReplyError {
    const failed = this.compile(text);
    if (failed) return failed;
    const { L } = this;
    lua.lua_settop(L, 0);
    lua.lua_getglobal(L, to_luastring('__rlock_sim_handler'));
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.compiled.get(text) as number);
    for (const [name, values] of [
      [KEYS, keys],
      [ARGV, args],
    ] as const) {
      lua.lua_createtable(L, values.length, 0);
      values.forEach((value, i) => {
        lua.lua_pushstring(L, toLua(value));
        lua.lua_rawseti(L, -2, i + 1);
      });
      lua.lua_setglobal(L, name);
    }
    const previous = this.runner;
    this.runner = runner;
    let status: number;
    try {
      status = lua.lua_pcall(L, 0, 1, 1);
    } finally {
      this.runner = previous;
    }
    if (status === lua.LUA_OK) {
      const reply = toReply(L, -1);
      lua.lua_settop(L, 0);
      return reply;
    }
    const where = lua.lua_getfield(L, -1, LINE) === lua.LUA_TNUMBER ? lua.lua_tonumber(L, -1) : 0;
    lua.lua_pop(L, 1);
    const raised = toReply(L, -1);
    lua.lua_settop(L, 0);
    const message = raised instanceof ReplyError ? raised.message : 'ERR unknown script error';
    return new ReplyError(`${message} script: ${sha1(text)}, on @user_script:${where}.`);
  }
}

let engine: LuaEngine | undefined;

/** Runs a script on whatever `runner` reaches; its reply, or the error Redis would answer. */
export function runScript(
  text: string,
  keys: string[],
  args: string[],
  runner: CommandRunner,
): Reply | ReplyError {
  engine ??= new LuaEngine();
  return engine.run(text, keys, args, runner);
}

export function compileScript(text: string): ReplyError | undefined {
  engine ??= new LuaEngine();
  return engine.compile(text);
}
