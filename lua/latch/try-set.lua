--[[
  Set the count of a count-down latch that is open (Redisson RCountDownLatch layout: the key exists
  only while the count is above zero), and announce it with Redisson's "new count" message.
  KEYS[1]  the latch: a string integer, the count
  KEYS[2]  channel redisson_countdownlatch__channel__{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  the count, >= 1
  ARGV[2]  how long the request latch outlives the request's window, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  Redisson's "new count" message (1)
  ARGV[5]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  1 when set, 0 when a count is set already (a re-sent copy: the first run's answer)
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = earlier_answer(KEYS[3], ARGV[5])
if earlier then return tonumber(earlier) end
-- Remembered either way: a copy that runs after the latch opened must not set it again.
if redis.call('exists', KEYS[1]) == 1 then
  return remember(KEYS[3], 0, ARGV[5], ARGV[2])
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], ARGV[4])
return remember(KEYS[3], 1, ARGV[5], ARGV[2])
