--[[
  Withdraw an acquire request whose caller stopped waiting before it learned the outcome (no
  answer in time, a connection cut after the command was written). Whatever it took is given back,
  and a copy that runs later takes nothing (acquire.lua answers it -3).
  KEYS[1]  the semaphore: a string integer, the available permits
  KEYS[2]  channel redisson_sc:{name}
  KEYS[3]  the request's latch (see include/requests.lua)
  ARGV[1]  how many permits the request asked for
  ARGV[2]  how long the latch outlives the request's window, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the acquire request's window (see acquire.lua): the withdrawal is remembered as long as
           its answer would be. A withdrawal is no copy of the request: it runs whenever it comes,
           and a second run of it finds 'w' and gives nothing back twice.
  Returns  1 when the request had taken permits and they are back now, else 0
]]
--@include include/clock.lua
--@include include/requests.lua

local earlier = redis.call('get', KEYS[3])
remember(KEYS[3], 'w', ARGV[4], ARGV[2])
if earlier ~= 'a' then return 0 end
local value = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], value)
return 1
