--[[
  Delete a read-write lock whoever holds it, when it is in the given mode (Redisson: the read
  lock's forceUnlock deletes only a read-mode lock, the write lock's only a write-mode one), and
  wake every waiter.
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  release channel (Redisson's redisson_rwlock:{name})
  KEYS[3]  waiting writers (zset, writerPreference)
  KEYS[4]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  'read' or 'write'
  ARGV[2]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when such a lock existed and is now gone, 0 otherwise
]]
--@include include/clock.lua
--@include include/rwlock.lua

if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[2], KEYS[2], '1')
  keep_preference(KEYS[4], KEYS[1], KEYS[3])
  return 1
end
return 0
