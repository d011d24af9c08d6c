--[[
  Delete a lock whoever holds it, and wake a waiter.
  KEYS[1]  lock hash
  KEYS[2]  unlock channel
  ARGV[1]  unlock message (Redisson's 0)
  ARGV[2]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when a lock existed and is now gone, 0 when there was none
]]
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
