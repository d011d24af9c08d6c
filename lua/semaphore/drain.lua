--[[
  Take every available permit (Redisson's drainPermits).
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  the request's latch (see include/requests.lua)
  ARGV[1]  how long the latch lives, in ms
  Returns  how many permits were taken (a re-sent copy: the same answer, taking nothing more)
]]
--@include include/requests.lua

local earlier = earlier_answer(KEYS[2])
if earlier then return tonumber(earlier) end
local value = tonumber(redis.call('get', KEYS[1]) or 0)
-- A count below zero (addPermits may take away more than there is) has nothing to drain.
if value <= 0 then return 0 end
redis.call('set', KEYS[1], 0)
remember(KEYS[2], value, ARGV[1])
return value
