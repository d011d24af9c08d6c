--[[
  Withdraw an acquire request whose caller stopped waiting before it knew the outcome: Redis was
  slow or paused, ioredis timed the command out, or the connection closed after it was written.
  The request may have taken effect, may run later, or may never run; whichever it is, afterwards
  it holds nothing, and a copy that runs later takes nothing (acquire.lua answers it -3).
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  unlock channel (Redisson's redisson_lock__channel:{name})
  KEYS[3]  latch of the request (see include/holds.lua)
  KEYS[4]  the lock's waiters (see include/lock-waiters.lua): one is woken when this frees the lock
  ARGV[1]  owner id
  ARGV[2]  how long the withdrawal is remembered, in ms (at least the request's lease)
  ARGV[3]  'publish', or 'spublish' when notifications are sharded; 'none' (the spin lock): no message
  ARGV[4]  the request's mark field (see include/holds.lua)
  Returns  1 when the request had taken a hold and it is released now, 0 otherwise
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/addresses.lua
--@include include/lock-waiters.lua

local took, freed = withdraw_request(KEYS[1], ARGV[1], KEYS[3], ARGV[4], tonumber(ARGV[2]))
if freed == 1 and ARGV[3] ~= 'none' then
  redis.call(ARGV[3], KEYS[2], '0') -- Redisson's unlock message, as in lock/release.lua
  if redis.call('exists', KEYS[4]) == 1 then wake_waiter(KEYS[4], KEYS[1]) end
end
return took
