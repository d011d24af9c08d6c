--[[
  Set the count of a count-down latch that is open (Redisson RCountDownLatch layout: the key exists
  only while the count is above zero), and announce it with Redisson's "new count" message.
  KEYS[1]  the latch: a string integer, the count
  KEYS[2]  channel redisson_countdownlatch__channel__{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  the count, >= 1
  ARGV[2]  how long the request latch lives, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  Redisson's "new count" message (1)
  Returns  1 when set (now, or by an earlier run of this request), 0 when a count is set already
]]
--@include include/requests.lua

if earlier_answer(KEYS[3]) then return 1 end
if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], ARGV[4])
remember(KEYS[3], 1, ARGV[2])
return 1
