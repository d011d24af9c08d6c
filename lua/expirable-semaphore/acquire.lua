--[[
  Take one permit of a permit-expirable semaphore (Redisson RPermitExpirableSemaphore layout), with
  a lease, when one is available; expired permits come back first.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  {name}:timeout: sorted set, permit id (16 bytes) -> epoch ms it expires
  KEYS[3]  channel redisson_sc:{name}
  KEYS[4]  the request's latch (see include/requests.lua): written only when it is withdrawn
  ARGV[1]  the new permit's id, 32 hex characters (it names the request: a re-sent copy finds it)
  ARGV[2]  lease in ms, or -1: the permit never expires
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the request's window: server time (ms) after which a copy takes no effect (fails LATE;
           see include/requests.lua)
  Returns  nil when taken (now, or by an earlier run of this request); otherwise the ms until the
           first permit out expires, or -1 when none will; -3 when the request was withdrawn
]]
--@include include/clock.lua
--@include include/permits.lua

if redis.call('exists', KEYS[4]) == 1 then return -3 end
local now = server_ms()
local id = permit_bytes(ARGV[1])
return_expired(KEYS[1], KEYS[2], KEYS[3], now, ARGV[3])
if redis.call('zscore', KEYS[2], id) then return nil end
if now > tonumber(ARGV[4]) then
  error({ err = 'LATE this copy of the request reached Redis after its window closed; it took no effect' })
end
local value = tonumber(redis.call('get', KEYS[1]) or 0)
if value >= 1 then
  redis.call('decr', KEYS[1])
  local lease = tonumber(ARGV[2])
  redis.call('zadd', KEYS[2], lease < 0 and NEVER_EXPIRES or now + lease, id)
  -- Redisson: the permits out live as long as the semaphore.
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return nil
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] == nil or tonumber(first[2]) >= NEVER_EXPIRES then return -1 end
return math.max(1, tonumber(first[2]) - now)
