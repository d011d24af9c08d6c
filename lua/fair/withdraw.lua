--[[
  Withdraw a fair-lock acquire request whose caller stopped waiting before it knew the outcome (see
  lock/withdraw.lua): afterwards it holds nothing, and a copy that runs later takes nothing. Its
  place in the queue, if any, is the wait's to keep or to leave (fair/leave.lua).
  KEYS[1..7]  lock hash, queue, deadlines, hand-off marker, channels, Redisson's queue and timeouts
              (see fair/acquire.lua)
  KEYS[8]     latch of the request
  ARGV[1]     owner id
  ARGV[2]     how long the withdrawal is remembered, in ms
  ARGV[3]     hand-off timeout in ms (the provisional lease of a hand-off)
  ARGV[4]     the request's mark field (see include/holds.lua)
  ARGV[5]     'publish', or 'spublish' when notifications are sharded: how Redisson's waiters are told
  Returns     1 when the request had taken a hold and it is released now (and the lock handed on
              if that freed it), 0 otherwise; plus HANDED_ON (2) when it handed the lock to a
              waiter (see fair/settle.lua)
]]
--@include include/clock.lua
--@include include/holds.lua

local took, freed = withdraw_request(KEYS[1], ARGV[1], KEYS[8], ARGV[4], tonumber(ARGV[2]))
-- As in fair/release.lua: the hand-off's helpers only when there may be someone to hand off to.
if freed == 1 and redis.call('exists', KEYS[4], KEYS[2], KEYS[6]) > 0 then
--@include include/addresses.lua
--@include include/fair-queue.lua
  redisson_side(KEYS[6], KEYS[7], ARGV[5])
  if hand_on_released(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[3]) then
    return took + HANDED_ON
  end
end
return took
