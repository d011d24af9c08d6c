--[[
  Settles a hand-off this client made, once it could have come back: if the waiter it granted the
  lock to never confirmed (its process is gone, or cannot reach Redis), the provisional grant has
  run out and the lock is free; the waiter is passed over and the lock goes to the next in line.
  KEYS[1..7]  lock hash, queue, deadlines, hand-off marker, channels, Redisson's queue and timeouts
              (see fair/acquire.lua)
  ARGV[1]     hand-off timeout in ms (the provisional lease of a hand-off)
  ARGV[2]     'publish', or 'spublish' when notifications are sharded: how Redisson's waiters are told
  Returns     HANDED_ON (2) when it handed the lock on (to be watched in turn), 0 when there was
              nothing to do: the hand-off was taken up, or nobody waits

  Sent by the client whose release (or give-up, withdrawal, forced release) made the grant, one
  hand-off timeout after it: a grant to a waiter that is gone costs the queue one hand-off timeout,
  not a refresh period.
]]
--@include include/clock.lua
--@include include/addresses.lua
--@include include/fair-queue.lua

redisson_side(KEYS[6], KEYS[7], ARGV[2])
if redis.call('exists', KEYS[2], KEYS[6]) == 0 then return 0 end
return hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], server_ms(), ARGV[1]) and HANDED_ON or 0
