--[[
  Withdraw an acquire request whose caller stopped waiting before it learned the outcome: the
  permit it took, if any, goes back, and a copy that runs later takes nothing (acquire.lua
  answers it -3).
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  channel redisson_sc:{name}
  KEYS[3]  {name}:timeout: sorted set, permit id (16 bytes) -> epoch ms it expires
  KEYS[4]  the request's latch (see include/requests.lua)
  ARGV[1]  the permit id the request asked for, 32 hex characters
  ARGV[2]  how long the latch outlives the request's window, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the acquire request's window (see acquire.lua)
  Returns  1 when the request had taken its permit and it is back now, else 0
]]
--@include include/clock.lua
--@include include/requests.lua
--@include include/permits.lua

remember(KEYS[4], 'w', ARGV[4], ARGV[2])
if redis.call('zrem', KEYS[3], permit_bytes(ARGV[1])) == 0 then return 0 end
local value = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[3], KEYS[2], value)
return 1
