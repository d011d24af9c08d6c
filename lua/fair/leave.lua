--[[
  A waiter gives up (its waitTime passed, its signal aborted, its client closed): it leaves the
  queue at once, and a hand-off that reached it too late is passed on to the next waiter.
  KEYS[1..5]  lock hash, queue, deadlines, hand-off marker, hand-off channel (see fair/acquire.lua)
  ARGV[1]     owner id
  ARGV[2]     waiter timeout in ms (the provisional lease of a hand-off)
  ARGV[3]     'publish', or 'spublish' when notifications are sharded
  Returns     1 when an unconfirmed hand-off was given back, else 0
]]
--@include include/fair-queue.lua

publish_command = ARGV[3]

redis.call('lrem', KEYS[2], 1, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
local returned = 0
if redis.call('get', KEYS[4]) == ARGV[1] then
  redis.call('del', KEYS[4])
  redis.call('hdel', KEYS[1], ARGV[1])
  returned = 1
end
hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], server_now(), ARGV[2])
return returned
