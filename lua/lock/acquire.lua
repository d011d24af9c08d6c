--[[
  Acquire or re-enter a reentrant lock (Redisson RLock layout).
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  the request's latch key (see include/holds.lua)
  ARGV[1]  lease in ms (the watchdog timeout for watchdog locks)
  ARGV[2]  owner id "<clientId>:<ownerNumber>"
  ARGV[3]  the request's mark field (see include/holds.lua)
  Returns  nil when acquired or re-entered; otherwise the holder's remaining ttl in ms (-1: no expiry);
           -3 when the request was withdrawn before it ran (see withdraw.lua)

  One EXISTS asks both questions of the common case, "is the lock free, and was this request not
  withdrawn?" (both keys are in the lock's slot): 0 means yes to both, and the lock is taken with
  two more calls. Otherwise the ttl tells which of the two keys exists.
]]
--@include include/clock.lua
--@include include/holds.lua

local lease = ARGV[1]
local found = redis.call('exists', KEYS[1], KEYS[2])
if found == 0 then
  add_hold(KEYS[1], ARGV[2], nil, lease, ARGV[3], 'a', -2)
  return nil
end
local ttl = redis.call('pttl', KEYS[1])
-- The latch exists (the lock alone would count 1 with a ttl): the request was withdrawn.
if ttl == -2 or found == 2 then return -3 end
local count, mark = hold_state(KEYS[1], ARGV[2], ARGV[3])
if mark then return nil end
if count then
  add_hold(KEYS[1], ARGV[2], count, lease, ARGV[3], 'a', ttl)
  return nil
end
return ttl
