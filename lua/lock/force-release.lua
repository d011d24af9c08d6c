--[[
  Delete a lock whoever holds it, and wake a waiter.
  KEYS[1]  lock hash
  KEYS[2]  unlock channel
  ARGV[1]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when a lock existed and is now gone, 0 when there was none
]]
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '0') -- Redisson's unlock message, as in lock/release.lua
  return 1
end
return 0
