--[[
  Acquire or re-enter the read lock of a read-write lock (Redisson RReadWriteLock layout).
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  the request's latch key (see include/holds.lua)
  KEYS[3]  the owner's read-hold timeout prefix: <base>:<owner id>:rwlock_timeout
  KEYS[4]  waiting writers (zset: writer field -> when its place lapses, server ms)
  KEYS[5]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  lease in ms (the watchdog timeout for watchdog locks)
  ARGV[2]  owner id (the read field)
  ARGV[3]  the same owner's write field: <owner id>:write
  ARGV[4]  the request's mark field (see include/holds.lua)
  Returns  nil when acquired or re-entered; otherwise how long to wait at most, in ms: the
           holder's remaining ttl (-1: no expiry), or while writers wait (writerPreference), how
           long until their places lapse; -3 when the request was withdrawn before it ran

  Many owners read at once; a writer excludes every other owner, but may read itself (and keeps
  its read holds when it releases the write lock). While writers wait, only owners that already
  read (re-entry) or write come in: a stream of new readers cannot starve a writer.
  A value at the name that is not a read-write lock (no mode) counts as held by someone else.
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/rwlock.lua

if redis.call('exists', KEYS[2]) == 1 then return -3 end
local lease = tonumber(ARGV[1])
local count, mark = hold_state(KEYS[1], ARGV[2], ARGV[4])
if mark then return nil end
local mode = redis.call('hget', KEYS[1], 'mode')
local ttl = redis.call('pttl', KEYS[1])
if not mode and ttl ~= -2 then return ttl end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return ttl end
if not count and mode ~= 'write' then
  local wait = writers_wait(KEYS[4])
  if wait > 0 then return wait end
end
if not mode then redis.call('hset', KEYS[1], 'mode', 'read') end
local n = (count or 0) + 1
redis.call('hset', KEYS[1], ARGV[2], n, ARGV[4], 'a')
redis.call('set', KEYS[3] .. ':' .. n, 1, 'px', lease)
if ttl < lease then
  redis.call('pexpire', KEYS[1], lease)
  keep_preference(KEYS[5], KEYS[1], nil, lease)
end
return nil
