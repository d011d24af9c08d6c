--[[
  Release one hold of a fair lock; the last hold hands the lock straight to the next waiter.
  KEYS[1..4]  lock hash, queue, deadlines, hand-off marker (see fair/acquire.lua)
  KEYS[5]     hold latch of the hold being released
  ARGV[1]     owner id
  ARGV[2]     how long the latch remembers this release at least, in ms
  ARGV[3]     waiter timeout in ms (the provisional lease of a hand-off)
  Returns     1 when this owner's last hold is gone, 0 when it still holds, nil when it held nothing

  Direct hand-off: the head of the queue is granted the lock inside this script and told on its
  client's channel, so the woken waiter holds the lock without another round trip.
]]
--@include include/holds.lua
--@include include/fair-queue.lua

local replayed = release_replayed(KEYS[5])
if replayed then return replayed end
local freed = remove_hold(KEYS[1], ARGV[1], KEYS[5], tonumber(ARGV[2]))
if freed == 1 then
  if redis.call('get', KEYS[4]) == ARGV[1] then
    redis.call('del', KEYS[4])
  end
  hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], server_now(), tonumber(ARGV[3]))
end
return freed
