--[[
  Acquire or re-enter the write lock of a read-write lock (Redisson RReadWriteLock layout).
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  the request's latch key (see include/holds.lua)
  KEYS[3]  waiting writers (zset: writer field -> when its place lapses, server ms)
  KEYS[4]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  lease in ms (the watchdog timeout for watchdog locks)
  ARGV[2]  the writer's field: <owner id>:write
  ARGV[3]  'try' (one attempt: never waits), 'first' or 'queued' (an attempt of a wait)
  ARGV[4]  how long a waiting writer's place lasts without another attempt, in ms
  ARGV[5]  '1' when this handle asks for writerPreference (sets the flag while the name is in use),
           '' otherwise
  ARGV[6]  the request's mark field (see include/holds.lua)
  Returns  nil when acquired or re-entered; otherwise how long to wait at most, in ms: the
           holder's remaining ttl (-1: no expiry), or for a waiting writer of a name that prefers
           writers at most a third of its place's life (it comes back to keep its place);
           -3 when the request was withdrawn before it ran

  Only a free lock, or one this owner writes already, is taken: an owner that only reads cannot
  upgrade (Redisson refuses it too; its wait runs out). A re-entry never shortens the lease.
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/rwlock.lua

-- Set without a ttl here, given the name's life by keep_preference before the script ends.
if ARGV[5] == '1' then redis.call('set', KEYS[4], '1', 'keepttl') end

local function attempt()
  if redis.call('exists', KEYS[2]) == 1 then return -3 end
  local lease = ARGV[1]
  local count, mark = hold_state(KEYS[1], ARGV[2], ARGV[6])
  if mark then return nil end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl == -2 or (count and redis.call('hget', KEYS[1], 'mode') == 'write') then
    if ttl == -2 then redis.call('hset', KEYS[1], 'mode', 'write') end
    add_hold(KEYS[1], ARGV[2], count, lease, ARGV[6], 'a', ttl)
    redis.call('zrem', KEYS[3], ARGV[2])
    return nil
  end
  if ARGV[3] ~= 'try' and redis.call('exists', KEYS[4]) == 1 then
    local place = tonumber(ARGV[4])
    redis.call('zadd', KEYS[3], server_ms() + place, ARGV[2])
    if redis.call('pttl', KEYS[3]) < place then redis.call('pexpire', KEYS[3], place) end
    local recheck = math.max(1, math.floor(place / 3))
    if ttl < 0 or ttl > recheck then return recheck end
  end
  return ttl
end

local answer = attempt()
keep_preference(KEYS[4], KEYS[1], KEYS[3], ARGV[4])
return answer
