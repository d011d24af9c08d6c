--[[
  Renew the read holds of many watchdog-held read locks in one call.
  KEYS[2i-1]    lock hash of the i-th hold
  KEYS[2i]      its owner's read-hold timeout prefix: <base>:<owner id>:rwlock_timeout
  ARGV[1]       lease in ms
  ARGV[i+1]     owner id (read field) of the i-th hold
  Returns       a table with, per hold, 1 renewed or 0 refused (the owner no longer reads)

  Each of the owner's read holds' timeout keys gets the lease, and the hash at least as much (a
  longer lease of another reader is never cut). A renewal never creates anything; a value of
  another type at a key counts as refused.
]]
local lease = tonumber(ARGV[1])
local renewed = {}
for i = 1, #KEYS, 2 do
  local count = redis.pcall('hget', KEYS[i], ARGV[(i + 1) / 2 + 1])
  count = type(count) == 'string' and tonumber(count) or nil
  if count then
    for n = count, 1, -1 do
      redis.call('pexpire', KEYS[i + 1] .. ':' .. n, lease)
    end
    if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
    renewed[#renewed + 1] = 1
  else
    renewed[#renewed + 1] = 0
  end
end
return renewed
