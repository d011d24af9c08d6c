--[[
  A waiting writer gives up (its wait ran out or was aborted): its place goes, and when no writer
  waits any more, the readers that queued behind it are woken.
  KEYS[1]  waiting writers (zset, writerPreference)
  KEYS[2]  release channel (Redisson's redisson_rwlock:{name})
  ARGV[1]  the writer's field: <owner id>:write
  ARGV[2]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when it had a place, 0 otherwise
]]
--@include include/rwlock.lua

if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
if writers_wait(KEYS[1]) == 0 then redis.call(ARGV[2], KEYS[2], '1') end
return 1
