--[[
  Set the permits of a semaphore that has none set yet (Redisson's trySetPermits), and announce them.
  Shared by the semaphore and the permit-expirable semaphore: both keep the count at the name.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  channel redisson_sc:{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  the permits
  ARGV[2]  how long the latch outlives the request's window, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  1 when set, 0 when permits were set already (a re-sent copy: the first run's answer)
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = earlier_answer(KEYS[3], ARGV[4])
if earlier then return tonumber(earlier) end
-- Remembered either way: a copy that runs after the semaphore went must not set it again.
if redis.call('exists', KEYS[1]) == 1 then
  return remember(KEYS[3], 0, ARGV[4], ARGV[2])
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
return remember(KEYS[3], 1, ARGV[4], ARGV[2])
