--[[
  Give a permit still out a new lease, from now (Redisson's updateLeaseTime). Expired permits come
  back first, so an expired permit cannot be renewed. Running twice sets the same lease again.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  {name}:timeout: sorted set, permit id (16 bytes) -> epoch ms it expires
  KEYS[3]  channel redisson_sc:{name}
  ARGV[1]  the permit id, 32 hex characters
  ARGV[2]  the new lease in ms, or -1: never expires
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when updated, 0 when the permit is unknown or expired
]]
--@include include/clock.lua
--@include include/permits.lua

local now = server_ms()
return_expired(KEYS[1], KEYS[2], KEYS[3], now, ARGV[3])
local id = permit_bytes(ARGV[1])
if not redis.call('zscore', KEYS[2], id) then return 0 end
local lease = tonumber(ARGV[2])
redis.call('zadd', KEYS[2], lease < 0 and NEVER_EXPIRES or now + lease, id)
return 1
