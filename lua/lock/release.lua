--[[
  Release one hold of a reentrant lock; the last hold deletes the lock and wakes a waiter.
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  unlock channel (Redisson's redisson_lock__channel:{name})
  KEYS[3]  latch of the request that took the hold (see include/holds.lua)
  KEYS[4]  the lock's waiters (see include/lock-waiters.lua)
  ARGV[1]  owner id
  ARGV[2]  how long a release that leaves other holds is remembered at least, in ms (the hold's lease)
  ARGV[3]  'publish', or 'spublish' when notifications are sharded (a cluster's shard channels);
           'none' for the spin lock, whose servers may have no pub/sub command at all
  ARGV[4]  'marked': release the hold the request marks; else the window (server ms) of a release of
           any one hold of the owner (see release_hold)
  ARGV[5]  the request's mark field (see include/holds.lua)
  Returns  1 when the lock is now free, 0 when the owner still holds it, nil when the hold is gone;
           3 (1 + HANDED_ON) when it is free and a waiting client was woken (the caller watches
           that wake-up, see lock/pass-on.lua); a LATE error for a copy of a release of any hold
           that ran after its window

  A re-sent copy of a release that left other holds answers 0 again instead of releasing a second
  hold. Releasing an inner hold leaves the ttl as it is: the outer hold keeps the lease it had (or
  the watchdog's).
]]
--@include include/clock.lua
--@include include/holds.lua

local freed, remembered = release_hold(KEYS[1], ARGV[1], KEYS[3], ARGV[5], tonumber(ARGV[2]), ARGV[4])
-- A copy of a release that ran already answers as it did, and wakes nobody a second time.
if remembered then return freed end
if freed == 1 and ARGV[3] ~= 'none' then
  -- Redisson's message for "an exclusive lock was released": it wakes one waiter per process.
  -- Written here, not sent: each argument of a script costs Redis about 2,000 instructions.
  redis.call(ARGV[3], KEYS[2], '0')
  -- Waiting clients, the contended case: only then are the helpers that wake one defined (Lua
  -- makes a closure of every local function it passes, on every run).
  if redis.call('exists', KEYS[4]) == 1 then
--@include include/addresses.lua
--@include include/lock-waiters.lua
    if wake_waiter(KEYS[4], KEYS[1]) then return 3 end
  end
end
return freed
