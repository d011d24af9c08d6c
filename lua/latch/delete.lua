--[[
  Delete a count-down latch, opening it, with Redisson's "new count" message as Redisson's delete
  sends (Redisson's waiters look again; rlock's find it open).
  KEYS[1]  the latch: a string integer, the count
  KEYS[2]  channel redisson_countdownlatch__channel__{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  how long the request latch outlives the request's window, in ms
  ARGV[2]  'publish', or 'spublish' when notifications are sharded
  ARGV[3]  Redisson's "new count" message (1)
  ARGV[4]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  1 when a latch existed and is gone, else 0 (a re-sent copy: the first run's answer)
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = earlier_answer(KEYS[3], ARGV[4])
if earlier then return tonumber(earlier) end
-- Remembered either way: a copy that runs after a new count was set must not delete it.
if redis.call('del', KEYS[1]) == 0 then
  return remember(KEYS[3], 0, ARGV[4], ARGV[1])
end
redis.call(ARGV[2], KEYS[2], ARGV[3])
return remember(KEYS[3], 1, ARGV[4], ARGV[1])
