--[[
  Release one hold of a fair lock; the last hold hands the lock straight to the next waiter.
  KEYS[1..5]  lock hash, queue, deadlines, hand-off marker, hand-off channel (see fair/acquire.lua)
  KEYS[6]     latch of the request that took the hold (see include/holds.lua)
  ARGV[1]     owner id
  ARGV[2]     how long a release that leaves other holds is remembered at least, in ms
  ARGV[3]     waiter timeout in ms (the provisional lease of a hand-off)
  ARGV[4]     'publish', or 'spublish' when notifications are sharded
  ARGV[5]     'marked': release the hold the request marks; 'any': any hold of the owner (a hand-off
              not confirmed yet carries no mark)
  ARGV[6]     the request's mark field (see include/holds.lua)
  Returns     1 when this owner's last hold is gone, 0 when it still holds, nil when the hold is gone

  Direct hand-off: the head of the queue is granted the lock inside this script and told on the
  lock's hand-off channel, so the woken waiter holds the lock without another round trip.
]]
--@include include/holds.lua
--@include include/fair-queue.lua

publish_command = ARGV[4]
local freed = release_hold(KEYS[1], ARGV[1], KEYS[6], ARGV[6], tonumber(ARGV[2]), ARGV[5] == 'any')
if freed == 1 then
  hand_on_released(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[3])
end
return freed
