--[[
  Withdraw a fair-lock acquire request whose caller stopped waiting before it knew the outcome (see
  lock/withdraw.lua): afterwards it holds nothing, and a copy that runs later takes nothing. Its
  place in the queue, if any, is the wait's to keep or to leave (fair/leave.lua).
  KEYS[1..5]  lock hash, queue, deadlines, hand-off marker, hand-off channel (see fair/acquire.lua)
  KEYS[6]     latch of the request
  ARGV[1]     owner id
  ARGV[2]     how long the withdrawal is remembered, in ms
  ARGV[3]     waiter timeout in ms (the provisional lease of a hand-off)
  ARGV[4]     'publish', or 'spublish' when notifications are sharded
  ARGV[5]     the request's mark field (see include/holds.lua)
  Returns     1 when the request had taken a hold and it is released now (and the lock handed on
              if that freed it), 0 otherwise
]]
--@include include/holds.lua
--@include include/fair-queue.lua

publish_command = ARGV[4]
local took, freed = withdraw_request(KEYS[1], ARGV[1], KEYS[6], ARGV[5], tonumber(ARGV[2]))
if freed == 1 then
  hand_on_released(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[3])
end
return took
