--[[
  Set the permits of a semaphore that has none set yet (Redisson's trySetPermits), and announce them.
  Shared by the semaphore and the permit-expirable semaphore: both keep the count at the name.
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  channel redisson_sc:{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  the permits
  ARGV[2]  how long the latch lives, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when set (now, or by an earlier run of this request), 0 when permits were set already
]]
--@include include/requests.lua

if earlier_answer(KEYS[3]) then return 1 end
if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
remember(KEYS[3], 1, ARGV[2])
return 1
