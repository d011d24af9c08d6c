--[[
  An attempt of a wait on a reentrant lock (getLock), after its client listens for wake-ups: as
  lock/acquire.lua, and it keeps the client's entry among the lock's waiters (see
  include/lock-waiters.lua), so that a release wakes this client rather than every waiting one.
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  the request's latch key (see include/holds.lua)
  KEYS[3]  the lock's waiters (see include/lock-waiters.lua)
  ARGV[1]  lease in ms (the watchdog timeout for watchdog locks)
  ARGV[2]  owner id
  ARGV[3]  the request's mark field (see include/holds.lua)
  ARGV[4]  this client's address, where it hears wake-ups (see include/addresses.lua)
  ARGV[5]  '1' when this is the client's only wait on the lock: once it takes the lock, the client
           waits no more and its entry goes; '0': it stays, at the back
  Returns  nil when acquired or re-entered; otherwise the holder's remaining ttl in ms (-1: no
           expiry), or that ttl in a table of one when the holder is not an rlock client (rlock's
           holds carry a mark beside the owner's count, two fields at least, where Redisson's hash
           holds its thread's count alone): Redisson's release only its channel announces, so the
           wait listens there too; -3 when the request was withdrawn before it ran
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/addresses.lua
--@include include/lock-waiters.lua

local lock, latch, waiters = KEYS[1], KEYS[2], KEYS[3]
local lease, owner, field, address = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- Taken (or re-entered): the client no longer waits, or waits for another of its owners.
local function taken()
  if ARGV[5] == '1' then
    redis.call('zrem', waiters, address)
  else
    redis.call('zadd', waiters, 'XX', server_ms(), address)
  end
  return nil
end

local found = redis.call('exists', lock, latch)
if found == 0 then
  add_hold(lock, owner, nil, lease, field, 'a', -2)
  return taken()
end
local ttl = redis.call('pttl', lock)
if ttl == -2 or found == 2 then return -3 end
local count, mark = hold_state(lock, owner, field)
if mark then return taken() end
if count then
  add_hold(lock, owner, count, lease, field, 'a', ttl)
  return taken()
end
redis.call('zadd', waiters, 'NX', server_ms(), address)
if redis.call('pttl', waiters) < WAITERS_LIVE_MS / 2 then redis.call('pexpire', waiters, WAITERS_LIVE_MS) end
if redis.call('hlen', lock) > 1 then return ttl end
return { ttl }
