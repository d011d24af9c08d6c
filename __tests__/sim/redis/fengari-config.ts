/**
 * Read by fengari once, when it loads: imported before it. Redis runs Lua 5.1, where every number
 * is a double and 2 prints as "2"; fengari runs Lua 5.3, which prints an integral float as "2.0"
 * unless LUA_COMPAT_FLOATSTRING is on. (Its integers are 32-bit: see lua.ts for the rest.)
 */
process.env.FENGARICONF = JSON.stringify({ LUA_COMPAT_FLOATSTRING: true });
