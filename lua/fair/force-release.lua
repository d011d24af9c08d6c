--[[
  Delete a fair lock whoever holds it, and hand it to the next waiter.
  KEYS[1..5]  lock hash, queue, deadlines, hand-off marker, hand-off channel (see fair/acquire.lua)
  ARGV[1]     waiter timeout in ms (the provisional lease of a hand-off)
  ARGV[2]     'publish', or 'spublish' when notifications are sharded
  Returns     1 when a lock existed and is now gone, 0 when there was none
]]
--@include include/fair-queue.lua

publish_command = ARGV[2]

local existed = redis.call('del', KEYS[1])
redis.call('del', KEYS[4])
hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], server_now(), ARGV[1])
return existed
