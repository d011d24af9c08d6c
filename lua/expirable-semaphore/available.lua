--[[
  Count the available permits of a permit-expirable semaphore, after putting expired ones back
  (Redisson's availablePermits does the same: reading returns expired permits).
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  {name}:timeout: sorted set, permit id (16 bytes) -> epoch ms it expires
  KEYS[3]  channel redisson_sc:{name}
  ARGV[1]  'publish', or 'spublish' when notifications are sharded
  Returns  the available permits
]]
--@include include/clock.lua
--@include include/permits.lua

return_expired(KEYS[1], KEYS[2], KEYS[3], server_ms(), ARGV[1])
return tonumber(redis.call('get', KEYS[1]) or 0)
