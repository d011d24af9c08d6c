--[[
  Take permits of a semaphore (Redisson RSemaphore layout), when enough are available.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  the request's latch (see include/requests.lua)
  ARGV[1]  how many permits, >= 1
  ARGV[2]  how long the latch outlives the request's window, in ms
  ARGV[3]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  {1, 0} when taken (now, or by an earlier run of this request); {0, available} when too
           few are available (the client hands a wake-up on when some are, for a smaller request);
           {-3, 0} when the request was withdrawn before it ran (see withdraw.lua)
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = earlier_answer(KEYS[2], ARGV[3])
if earlier == 'w' then return {-3, 0} end
if earlier then return {1, 0} end
local value = tonumber(redis.call('get', KEYS[1]) or 0)
local wanted = tonumber(ARGV[1])
if value < wanted then return {0, value} end
redis.call('decrby', KEYS[1], ARGV[1])
remember(KEYS[2], 'a', ARGV[3], ARGV[2])
return {1, 0}
