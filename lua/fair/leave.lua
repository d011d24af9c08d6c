--[[
  A waiter gives up (its waitTime passed, its signal aborted, its client closed, or its client
  heard a hand-off to it after it had stopped waiting): it leaves the queue at once, and a
  hand-off that reached it too late is passed on to the next waiter.
  KEYS[1..7]  lock hash, queue, deadlines, hand-off marker, channels, Redisson's queue and timeouts
              (see fair/acquire.lua)
  ARGV[1]     owner id
  ARGV[2]     hand-off timeout in ms (the provisional lease of a hand-off this passes on)
  ARGV[3]     'publish', or 'spublish' when notifications are sharded: how Redisson's waiters are told
  Returns     1 when an unconfirmed hand-off was given back, else 0; plus HANDED_ON (2) when it
              handed the lock to the next waiter (see fair/settle.lua)

  Sent until Redis answers it (a give-up during an outage takes effect once Redis is back), so it
  may run more than once: a second run finds nothing to do.
]]
--@include include/clock.lua
--@include include/addresses.lua
--@include include/fair-queue.lua

local lock, queue, deadlines, marker, channels, owner = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1]
redisson_side(KEYS[6], KEYS[7], ARGV[3])

remove_place(queue, deadlines, channels, owner)
local returned = 0
if redis.call('exists', marker) == 1 then
  if redis.call('hget', marker, PENDING) == owner then
    redis.call('hdel', marker, PENDING)
    redis.call('hdel', lock, owner)
    returned = 1
  end
  redis.call('hdel', marker, owner)
end
if hand_on(lock, queue, deadlines, marker, channels, server_ms(), ARGV[2]) then
  return returned + HANDED_ON
end
return returned
