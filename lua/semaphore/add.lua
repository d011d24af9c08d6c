--[[
  Add permits to a semaphore (release, addPermits), and announce the new count as Redisson does:
  its waiters and rlock's wake up to that many.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  channel redisson_sc:{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  how many permits to add (negative: take away, as Redisson's addPermits may)
  ARGV[2]  how long the latch outlives the request's window, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  the available permits after the addition (a re-sent copy: the same answer again)
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = earlier_answer(KEYS[3], ARGV[4])
if earlier then return tonumber(earlier) end
local value = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], value)
return remember(KEYS[3], value, ARGV[4], ARGV[2])
