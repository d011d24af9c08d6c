--[[
  Withdraw a write acquire request whose caller stopped waiting before it knew the outcome (see
  lock/withdraw.lua): afterwards it holds nothing, and a copy that runs later takes nothing.
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  release channel (Redisson's redisson_rwlock:{name})
  KEYS[3]  latch of the request (see include/holds.lua)
  KEYS[4]  the base of every owner's timeout keys
  KEYS[5]  waiting writers (zset, writerPreference)
  KEYS[6]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  the writer's field: <owner id>:write
  ARGV[2]  how long the withdrawal is remembered, in ms (at least the request's lease)
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the request's mark field (see include/holds.lua)
  Returns  1 when the request had taken a hold and it is released now, 0 otherwise
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/rwlock.lua

local count, mark = hold_state(KEYS[1], ARGV[1], ARGV[4])
redis.call('set', KEYS[3], 'w', 'px', ARGV[2], 'nx')
if not mark or not count then return 0 end
local owner_freed = remove_write_hold(KEYS[1], ARGV[1], count, KEYS[3], ARGV[4], tonumber(ARGV[2]), KEYS[4])
if owner_freed == 1 then
  redis.call(ARGV[3], KEYS[2], '1')
  keep_preference(KEYS[6], KEYS[1], KEYS[5])
end
return 1
