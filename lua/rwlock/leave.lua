--[[
  A waiting writer gives up (its wait ran out or was aborted): its place goes, and when no writer
  waits any more, the readers that queued behind it are woken (and, when nobody holds the lock
  either, the name's writer preference goes).
  KEYS[1]  waiting writers (zset, writerPreference)
  KEYS[2]  release channel (Redisson's redisson_rwlock:{name})
  KEYS[3]  lock hash (see include/rwlock.lua)
  KEYS[4]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  the writer's field: <owner id>:write
  ARGV[2]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when it had a place, 0 otherwise
]]
--@include include/clock.lua
--@include include/rwlock.lua

if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
if writers_wait(KEYS[1]) == 0 then
  redis.call(ARGV[2], KEYS[2], '1')
  keep_preference(KEYS[4], KEYS[3], KEYS[1])
end
return 1
