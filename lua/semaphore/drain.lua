--[[
  Take every available permit (Redisson's drainPermits).
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  the request's latch (see include/requests.lua)
  ARGV[1]  how long the latch outlives the request's window, in ms
  ARGV[2]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  how many permits were taken (a re-sent copy: the same answer, taking nothing more)
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = earlier_answer(KEYS[2], ARGV[2])
if earlier then return tonumber(earlier) end
local value = tonumber(redis.call('get', KEYS[1]) or 0)
-- A count below zero (addPermits may take away more than there is) has nothing to drain.
if value <= 0 then
  value = 0
else
  redis.call('set', KEYS[1], 0)
end
-- Remembered either way: a copy that runs after permits came back must not drain them.
return remember(KEYS[2], value, ARGV[2], ARGV[1])
