/** The part of fengari (a Lua 5.3 VM in JavaScript, no types of its own) that the simulated Redis uses. */
declare module 'fengari' {
  type LuaState = object;
  type LuaString = Uint8Array;
  type JsFunction = (L: LuaState) => number;
  interface LuaDebug {
    currentline: number;
    short_src: LuaString;
  }
  export const lua: {
    LUA_OK: number;
    LUA_REGISTRYINDEX: number;
    LUA_TNIL: number;
    LUA_TBOOLEAN: number;
    LUA_TNUMBER: number;
    LUA_TSTRING: number;
    LUA_TTABLE: number;
    lua_pcall(L: LuaState, nargs: number, nresults: number, msgh: number): number;
    lua_gettop(L: LuaState): number;
    lua_settop(L: LuaState, idx: number): void;
    lua_pop(L: LuaState, n: number): void;
    lua_type(L: LuaState, idx: number): number;
    lua_isinteger(L: LuaState, idx: number): boolean;
    lua_tointeger(L: LuaState, idx: number): number;
    lua_tonumber(L: LuaState, idx: number): number;
    lua_toboolean(L: LuaState, idx: number): boolean;
    lua_tojsstring(L: LuaState, idx: number): string;
    lua_tolstring(L: LuaState, idx: number): LuaString;
    lua_pushnil(L: LuaState): void;
    lua_pushnumber(L: LuaState, n: number): void;
    lua_pushinteger(L: LuaState, n: number): void;
    lua_pushboolean(L: LuaState, b: boolean): void;
    lua_pushstring(L: LuaState, s: LuaString): void;
    lua_pushjsfunction(L: LuaState, fn: JsFunction): void;
    lua_pushvalue(L: LuaState, idx: number): void;
    lua_createtable(L: LuaState, narr: number, nrec: number): void;
    lua_rawseti(L: LuaState, idx: number, n: number): void;
    lua_rawgeti(L: LuaState, idx: number, n: number): number;
    lua_rawlen(L: LuaState, idx: number): number;
    lua_setfield(L: LuaState, idx: number, k: LuaString): void;
    lua_getfield(L: LuaState, idx: number, k: LuaString): number;
    lua_setglobal(L: LuaState, name: LuaString): void;
    lua_getglobal(L: LuaState, name: LuaString): number;
    lua_error(L: LuaState): never;
    lua_getstack(L: LuaState, level: number, ar: LuaDebug): number;
    lua_getinfo(L: LuaState, what: LuaString, ar: LuaDebug): number;
    lua_Debug: new () => LuaDebug;
  };
  export const lauxlib: {
    luaL_newstate(): LuaState;
    luaL_loadbuffer(L: LuaState, s: LuaString, sz: number | null, name: LuaString): number;
    luaL_ref(L: LuaState, t: number): number;
    luaL_dostring(L: LuaState, s: LuaString): number;
  };
  export const lualib: { luaL_openlibs(L: LuaState): void };
  export function to_luastring(s: string): LuaString;
  export function to_jsstring(s: LuaString): string;
}
