--[[
  Delete a lock whoever holds it, and wake a waiter.
  KEYS[1]  lock hash
  KEYS[2]  unlock channel
  KEYS[3]  the lock's waiters (see include/lock-waiters.lua): one is woken
  ARGV[1]  'publish', or 'spublish' when notifications are sharded; 'none' (the spin lock): no message
  Returns  1 when a lock existed and is now gone, 0 when there was none
]]
--@include include/clock.lua
--@include include/addresses.lua
--@include include/lock-waiters.lua

if redis.call('del', KEYS[1]) == 1 then
  -- Redisson's unlock message, as in lock/release.lua
  if ARGV[1] ~= 'none' then
    redis.call(ARGV[1], KEYS[2], '0')
    if redis.call('exists', KEYS[3]) == 1 then wake_waiter(KEYS[3], KEYS[1]) end
  end
  return 1
end
return 0
