--[[
  Acquire or re-enter a reentrant lock (Redisson RLock layout).
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  hold latch: marks that this request took effect, so a re-sent copy does not count twice
  ARGV[1]  lease in ms (the watchdog timeout for watchdog locks)
  ARGV[2]  owner id "<clientId>:<ownerNumber>"
  Returns  nil when acquired or re-entered; otherwise the holder's remaining ttl in ms (-1: no expiry)

  ioredis re-sends a command whose reply was lost to a reconnect, so this script can run twice for
  one request. The latch lives as long as the lock's ttl after this grant: while the hold can still
  be alive without a renewal, a second run finds the latch and changes nothing.
  Re-entry never shortens the lock's ttl: a short inner lease must not cut off the outer hold.
]]
if redis.call('exists', KEYS[2]) == 1 then
  return nil
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local ttl = redis.call('pttl', KEYS[1])
  if ttl < tonumber(ARGV[1]) then
    ttl = tonumber(ARGV[1])
    redis.call('pexpire', KEYS[1], ttl)
  end
  redis.call('set', KEYS[2], 'a', 'px', ttl)
  return nil
end
return redis.call('pttl', KEYS[1])
