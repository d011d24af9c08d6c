--[[
  Delete a count-down latch, opening it, with Redisson's "new count" message as Redisson's delete
  sends (Redisson's waiters look again; rlock's find it open).
  KEYS[1]  the latch: a string integer, the count
  KEYS[2]  channel redisson_countdownlatch__channel__{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  how long the request latch lives, in ms
  ARGV[2]  'publish', or 'spublish' when notifications are sharded
  ARGV[3]  Redisson's "new count" message (1)
  Returns  1 when a latch existed and is gone (now, or by an earlier run of this request), else 0
]]
--@include include/requests.lua

if earlier_answer(KEYS[3]) then return 1 end
if redis.call('del', KEYS[1]) == 0 then return 0 end
redis.call(ARGV[2], KEYS[2], ARGV[3])
remember(KEYS[3], 1, ARGV[1])
return 1
