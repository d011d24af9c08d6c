--[[
  Release one hold of a reentrant lock; the last hold deletes the lock and wakes a waiter.
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  unlock channel (Redisson's redisson_lock__channel:{name})
  KEYS[3]  latch of the request that took the hold (see include/holds.lua)
  ARGV[1]  owner id
  ARGV[2]  how long a release that leaves other holds is remembered at least, in ms (the hold's lease)
  ARGV[3]  'publish', or 'spublish' when notifications are sharded (a cluster's shard channels)
  ARGV[4]  'marked': release the hold the request marks; 'any': any hold of the owner (see release_hold)
  ARGV[5]  the request's mark field (see include/holds.lua)
  Returns  1 when the lock is now free, 0 when the owner still holds it, nil when the hold is gone

  A re-sent copy of a release that left other holds answers 0 again instead of releasing a second
  hold. Releasing an inner hold leaves the ttl as it is: the outer hold keeps the lease it had (or
  the watchdog's).
]]
--@include include/holds.lua

local freed = release_hold(KEYS[1], ARGV[1], KEYS[3], ARGV[5], tonumber(ARGV[2]), ARGV[4] == 'any')
if freed == 1 then
  -- Redisson's message for "an exclusive lock was released": it wakes one waiter per process.
  -- Written here, not sent: each argument of a script costs Redis about 2,000 instructions.
  redis.call(ARGV[3], KEYS[2], '0')
end
return freed
