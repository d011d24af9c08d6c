--[[
  Give a permit back by its id, and announce the new count as Redisson does.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  channel redisson_sc:{name}
  KEYS[3]  {name}:timeout: sorted set, permit id (16 bytes) -> epoch ms it expires
  KEYS[4]  the request's latch (see include/requests.lua)
  ARGV[1]  the permit id, 32 hex characters
  ARGV[2]  how long the latch outlives the request's window, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the request's window: server time (ms) after which a copy takes no effect (fails LATE)
  Returns  1 when released; 0 when the permit was unknown, or had expired (an expired permit still
           out is put back all the same, as Redisson does). A re-sent copy answers as the first run.
]]
--@include include/clock.lua
--@include include/requests.lua
--@include include/permits.lua

local earlier = earlier_answer(KEYS[4], ARGV[4])
if earlier then return tonumber(earlier) end
local id = permit_bytes(ARGV[1])
local expires = redis.call('zscore', KEYS[3], id)
if not expires then
  return remember(KEYS[4], 0, ARGV[4], ARGV[2])
end
redis.call('zrem', KEYS[3], id)
local value = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[3], KEYS[2], value)
local answer = tonumber(expires) > server_ms() and 1 or 0
return remember(KEYS[4], answer, ARGV[4], ARGV[2])
