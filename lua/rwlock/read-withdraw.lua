--[[
  Withdraw a read acquire request whose caller stopped waiting before it knew the outcome (see
  lock/withdraw.lua): afterwards it holds nothing, and a copy that runs later takes nothing.
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  release channel (Redisson's redisson_rwlock:{name})
  KEYS[3]  latch of the request (see include/holds.lua)
  KEYS[4]  the owner's read-hold timeout prefix: <base>:<owner id>:rwlock_timeout
  KEYS[5]  the base of every owner's timeout keys
  KEYS[6]  waiting writers (zset, writerPreference)
  KEYS[7]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  owner id (the read field)
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
local _, lock_freed = remove_read_hold(KEYS[1], ARGV[1], count, KEYS[3], ARGV[4], tonumber(ARGV[2]), KEYS[4], KEYS[5])
if lock_freed == 1 then
  redis.call(ARGV[3], KEYS[2], writers_wait(KEYS[6]) > 0 and '1' or '0')
  keep_preference(KEYS[7], KEYS[1], KEYS[6])
end
return 1
