--[[
  Count a count-down latch down by one; at zero the key goes and waiters are told with Redisson's
  "zero" message. An open latch (no key) stays open.
  KEYS[1]  the latch: a string integer, the count
  KEYS[2]  channel redisson_countdownlatch__channel__{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  how long the request latch outlives the request's window, in ms
  ARGV[2]  'publish', or 'spublish' when notifications are sharded
  ARGV[3]  Redisson's "zero" message (0)
  ARGV[4]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  the count left (0 when open); a re-sent copy answers as the first run, counting nothing
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = earlier_answer(KEYS[3], ARGV[4])
if earlier then return tonumber(earlier) end
local left = 0
-- Remembered even when open: a copy that runs after a new count was set must not count it down.
if redis.call('exists', KEYS[1]) == 1 then
  left = redis.call('decr', KEYS[1])
  if left <= 0 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[3])
    left = 0
  end
end
return remember(KEYS[3], left, ARGV[4], ARGV[1])
