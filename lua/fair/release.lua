--[[
  Release one hold of a fair lock; the last hold hands the lock straight to the next waiter.
  KEYS[1..5]  lock hash, queue, deadlines, hand-off marker, hand-off channel (see fair/acquire.lua)
  KEYS[6]     hold latch of the hold being released
  ARGV[1]     owner id
  ARGV[2]     how long the latch remembers this release at least, in ms
  ARGV[3]     waiter timeout in ms (the provisional lease of a hand-off)
  ARGV[4]     'publish', or 'spublish' when notifications are sharded
  Returns     1 when this owner's last hold is gone, 0 when it still holds, nil when it held nothing

  Direct hand-off: the head of the queue is granted the lock inside this script and told on the
  lock's hand-off channel, so the woken waiter holds the lock without another round trip.
]]
--@include include/holds.lua
--@include include/fair-queue.lua

publish_command = ARGV[4]
local replayed = release_replayed(KEYS[6])
if replayed then return replayed end
local freed = remove_hold(KEYS[1], ARGV[1], KEYS[6], tonumber(ARGV[2]))
if freed == 1 then
  if redis.call('get', KEYS[4]) == ARGV[1] then
    redis.call('del', KEYS[4])
  end
  hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], server_now(), tonumber(ARGV[3]))
end
return freed
