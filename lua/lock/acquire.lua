--[[
  Acquire or re-enter a reentrant lock (Redisson RLock layout).
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  hold latch: marks that this request took effect, so a re-sent copy does not count twice
  ARGV[1]  lease in ms (the watchdog timeout for watchdog locks)
  ARGV[2]  owner id "<clientId>:<ownerNumber>"
  Returns  nil when acquired or re-entered; otherwise the holder's remaining ttl in ms (-1: no expiry);
           -3 when the request was withdrawn before it ran (see withdraw.lua)
]]
--@include include/holds.lua

local state = redis.call('get', KEYS[2])
if state then
  if state == 'w' then return -3 end
  return nil
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  add_hold(KEYS[1], ARGV[2], tonumber(ARGV[1]), KEYS[2])
  return nil
end
return redis.call('pttl', KEYS[1])
