--[[
  Release one write hold of a read-write lock. The last one deletes the lock, or, when the writer
  also reads, leaves it in read mode (a downgrade); either way every waiter is woken.
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  release channel (Redisson's redisson_rwlock:{name})
  KEYS[3]  latch of the request that took the hold (see include/holds.lua)
  KEYS[4]  the base of every owner's timeout keys (<base>:<owner id>:rwlock_timeout:<n>)
  KEYS[5]  waiting writers (zset, writerPreference)
  KEYS[6]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  the writer's field: <owner id>:write
  ARGV[2]  how long a release that leaves other holds is remembered at least, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  'marked': release the hold the request marks; else the window (server ms) of a release
           of any one write hold of the owner (see release_hold in include/holds.lua)
  ARGV[5]  the request's mark field (see include/holds.lua)
  Returns  1 when the write lock is released, 0 when the owner still writes, nil when the hold is gone

  The message is Redisson's '1': readers can all come in now. Redisson publishes nothing on a
  downgrade, so its waiting readers sleep until their wait runs out; rlock wakes them.
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/rwlock.lua

local count, mark = hold_state(KEYS[1], ARGV[1], ARGV[5])
local any = ARGV[4] ~= 'marked'
if any or not mark then
  local settled, answer = settled_release(KEYS[3], ARGV[4])
  if settled then return answer end
end
if not count or redis.call('hget', KEYS[1], 'mode') ~= 'write' then return nil end
local owner_freed = remove_write_hold(KEYS[1], ARGV[1], count, KEYS[3], ARGV[5], tonumber(ARGV[2]), KEYS[4])
if any then remember_release(KEYS[3], owner_freed, ARGV[4], tonumber(ARGV[2])) end
if owner_freed == 1 then
  redis.call(ARGV[3], KEYS[2], '1')
  -- Gone with the lock, or kept as long as a downgrade's read holds.
  keep_preference(KEYS[6], KEYS[1], KEYS[5])
end
return owner_freed
