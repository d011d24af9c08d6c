--[[
  Renew the leases of many watchdog-held locks in one call.
  KEYS[1..n]    lock hashes
  ARGV[1]       lease in ms
  ARGV[2..n+1]  owner id holding KEYS[i]
  Returns       a table of n integers: 1 renewed, 0 refused (the owner no longer holds that lock)

  A renewal never creates a lock: when the owner's field is gone (released, expired, deleted) the
  answer is 0 and the client reports the loss. A value of another type at a key (overwritten by
  someone else) also counts as refused instead of failing the whole batch.
]]
local renewed = {}
for i = 1, #KEYS do
  local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
  if held == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
