--[[
  Give a permit back by its id, and announce the new count as Redisson does.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  channel redisson_sc:{name}
  KEYS[3]  {name}:timeout: sorted set, permit id (16 bytes) -> epoch ms it expires
  KEYS[4]  the request's latch (see include/requests.lua)
  ARGV[1]  the permit id, 32 hex characters
  ARGV[2]  how long the latch lives, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when released; 0 when the permit was unknown, or had expired (an expired permit still
           out is put back all the same, as Redisson does). A re-sent copy answers as the first run.
]]
--@include include/requests.lua
--@include include/permits.lua

local earlier = earlier_answer(KEYS[4])
if earlier then return tonumber(earlier) end
local id = permit_bytes(ARGV[1])
local expires = redis.call('zscore', KEYS[3], id)
if not expires then return 0 end
redis.call('zrem', KEYS[3], id)
local value = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[3], KEYS[2], value)
local answer = tonumber(expires) > now_ms() and 1 or 0
remember(KEYS[4], answer, ARGV[2])
return answer
