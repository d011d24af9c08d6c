--[[
  Renew the holds of many watchdog-held read-write locks in one call, read and write holds alike.
  KEYS[3i-2]  lock hash of the i-th hold
  KEYS[3i-1]  for a read hold, its owner's read-hold timeout prefix: <base>:<owner id>:rwlock_timeout;
              for a write hold, the lock hash again (unused: every key is named, in the lock's slot)
  KEYS[3i]    the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]     lease in ms
  ARGV[2i]    the i-th hold's field: the owner id of a read hold, <owner id>:write of a write hold
  ARGV[2i+1]  'r' for a read hold, 'w' for a write hold
  Returns     a table with, per hold, 1 renewed or 0 refused (the owner no longer holds it)

  A read hold: each of the owner's read holds' timeout keys gets the lease, and the hash at least as
  much (a longer lease of another reader is never cut). A write hold: the hash gets the lease, as
  lock/renew.lua does. Either way the name's writer preference lives on as long as the hash. A
  renewal never creates anything; a value of another type at a key counts as refused.
]]
--@include include/clock.lua
--@include include/rwlock.lua

local lease = tonumber(ARGV[1])
local renewed = {}
for i = 1, #KEYS / 3 do
  local lock, timeouts, preference = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local count = redis.pcall('hget', lock, ARGV[2 * i])
  count = type(count) == 'string' and tonumber(count) or nil
  if not count then
    renewed[i] = 0
  else
    if ARGV[2 * i + 1] == 'w' then
      redis.call('pexpire', lock, lease)
    else
      for n = count, 1, -1 do
        redis.call('pexpire', timeouts .. ':' .. n, lease)
      end
      if redis.call('pttl', lock) < lease then redis.call('pexpire', lock, lease) end
    end
    keep_preference(preference, lock)
    renewed[i] = 1
  end
end
return renewed
