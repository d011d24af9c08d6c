--[[
  Withdraw an acquire request whose caller stopped waiting before it knew the outcome: Redis was
  slow or paused, ioredis timed the command out, or the connection closed after it was written.
  The request may have taken effect, may run later, or may never run; whichever it is, afterwards
  it holds nothing.
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  unlock channel (Redisson's redisson_lock__channel:{name})
  KEYS[3]  hold latch of the request (see include/holds.lua)
  ARGV[1]  owner id
  ARGV[2]  how long the latch remembers this, in ms (at least the request's lease)
  ARGV[3]  unlock message (Redisson's 0)
  ARGV[4]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when the request had taken a hold and it is released now, 0 otherwise

  Not run yet: the latch is marked withdrawn ('w'), and acquire.lua answers a copy of the request
  that runs later with -3 and takes nothing.
]]
--@include include/holds.lua

local state = redis.call('get', KEYS[3])
if not state then
  redis.call('set', KEYS[3], 'w', 'px', ARGV[2])
  return 0
end
if string.sub(state, 1, 1) ~= 'a' then
  return 0
end
if remove_hold(KEYS[1], ARGV[1], KEYS[3], tonumber(ARGV[2])) == 1 then
  redis.call(ARGV[4], KEYS[2], ARGV[3])
end
return 1
