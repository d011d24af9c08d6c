--[[
  Helpers of the permit-expirable semaphore (Redisson RPermitExpirableSemaphore layout), pasted in
  where a script says "--@include include/permits.lua".

  The name holds the count of available permits (a string integer); {name}:timeout is a sorted set
  of the permits out: member the permit id as 16 raw bytes, score the epoch ms at which it expires
  (922337203685477 for "never"). Redisson shows ids as 32 hex characters and stores the bytes, so
  scripts take and give hex and convert here.
]]

-- Redisson's score of a permit without a lease.
local NEVER_EXPIRES = 922337203685477

-- 32 hex characters -> the 16 bytes Redisson keeps in the sorted set.
local function permit_bytes(hex)
  return (string.gsub(hex, '..', function(pair) return string.char(tonumber(pair, 16)) end))
end

-- Puts expired permits back into the count, and announces the new count as Redisson does (the
-- waiters woken try again). Returns how many came back.
local function return_expired(permits, timeouts, channel, now, publish)
  local expired = redis.call('zrangebyscore', timeouts, 0, now)
  if #expired == 0 then return 0 end
  redis.call('zrem', timeouts, unpack(expired))
  local value = redis.call('incrby', permits, #expired)
  if value > 0 then redis.call(publish, channel, value) end
  return #expired
end
