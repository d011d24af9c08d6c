--[[
  Release one hold of a fair lock; the last hold hands the lock straight to the next waiter.
  KEYS[1..7]  lock hash, queue, deadlines, hand-off marker, channels, Redisson's queue and timeouts
              (see fair/acquire.lua)
  KEYS[8]     latch of the request that took the hold (see include/holds.lua)
  ARGV[1]     owner id
  ARGV[2]     how long a release that leaves other holds is remembered at least, in ms
  ARGV[3]     hand-off timeout in ms (the provisional lease of a hand-off)
  ARGV[4]     'marked': release the hold the request marks; else the window (server ms) of a release
              of any one hold of the owner (a hand-off not confirmed yet carries no mark; see
              release_hold in include/holds.lua)
  ARGV[5]     the request's mark field (see include/holds.lua)
  ARGV[6]     'publish', or 'spublish' when notifications are sharded: how Redisson's waiters are told
  Returns     1 when this owner's last hold is gone, 0 when it still holds, nil when the hold is
              gone; 3 (1 + HANDED_ON) when the last hold is gone and the lock was handed to the next
              waiter, a hand-off the caller watches (see fair/settle.lua)

  Direct hand-off: the head of the queue is granted the lock inside this script and its client
  told on its own channel, so the woken waiter holds the lock without another round trip.
]]
--@include include/holds.lua

local freed, remembered = release_hold(KEYS[1], ARGV[1], KEYS[8], ARGV[5], tonumber(ARGV[2]), ARGV[4])
-- A copy of a release that ran already answers as it did, and hands nothing on a second time.
if remembered then return freed end
-- No hand-off pending and nobody waiting, the common case: one call says so, and the hand-off's
-- helpers (and the clock's) are not even defined: Lua makes a closure of every local function it
-- passes, on every run (see docs/hot-path.md).
local pending = freed == 1 and redis.call('exists', KEYS[4], KEYS[2], KEYS[6])
if pending and pending > 0 then
--@include include/clock.lua
--@include include/addresses.lua
--@include include/fair-queue.lua
  redisson_side(KEYS[6], KEYS[7], ARGV[6])
  -- One of the three, and the queue has a head: it is the queue, without a marker or Redisson's
  -- waiters, the contended case; reading the other two again would cost two calls per hand-off.
  local queue_head = pending == 1 and redis.call('lindex', KEYS[2], 0) or nil
  if hand_on_released(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[3], queue_head) then
    return freed + HANDED_ON
  end
end
return freed
