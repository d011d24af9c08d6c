--[[
  Delete a fair lock whoever holds it, and hand it to the next waiter.
  KEYS[1..7]  lock hash, queue, deadlines, hand-off marker, channels, Redisson's queue and timeouts
              (see fair/acquire.lua)
  ARGV[1]     hand-off timeout in ms (the provisional lease of a hand-off)
  ARGV[2]     'publish', or 'spublish' when notifications are sharded: how Redisson's waiters are told
  Returns     1 when a lock existed and is now gone, 0 when there was none; plus HANDED_ON (2) when
              it handed the lock to the next waiter (see fair/settle.lua)

  A hand-off not confirmed yet is a hold like any other: its client may be running the body of the
  wait it answered already (the confirmation follows, see AcquiringLock.confirmSoon). It goes with the
  lock, and its owner's place with it: the lock goes to the waiter behind, and the confirmation, if
  one comes, finds the hand-off lost (its client is told the lock was lost).
]]
--@include include/clock.lua
--@include include/addresses.lua
--@include include/fair-queue.lua


redisson_side(KEYS[6], KEYS[7], ARGV[2])
local existed = redis.call('del', KEYS[1])
local pending = redis.call('hget', KEYS[4], PENDING)
if pending then
  redis.call('hdel', KEYS[4], PENDING)
  remove_place(KEYS[2], KEYS[3], KEYS[5], pending)
end
if hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], server_ms(), ARGV[1]) then
  return existed + HANDED_ON
end
return existed
