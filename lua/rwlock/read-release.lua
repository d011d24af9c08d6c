--[[
  Release one read hold of a read-write lock; when the lock is then free it is deleted and waiters
  are woken.
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  release channel (Redisson's redisson_rwlock:{name})
  KEYS[3]  latch of the request that took the hold (see include/holds.lua)
  KEYS[4]  the owner's read-hold timeout prefix: <base>:<owner id>:rwlock_timeout
  KEYS[5]  the base of every owner's timeout keys (<base>:<owner id>:rwlock_timeout:<n>)
  KEYS[6]  waiting writers (zset, writerPreference)
  KEYS[7]  the name's writer-preference flag (see keep_preference in include/rwlock.lua)
  ARGV[1]  owner id (the read field)
  ARGV[2]  how long a release that leaves other holds is remembered at least, in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  'marked': release the hold the request marks; else the window (server ms) of a release
           of any one read hold of the owner (see release_hold in include/holds.lua)
  ARGV[5]  the request's mark field (see include/holds.lua)
  Returns  1 when the owner's last read hold is gone, 0 when it still reads, nil when the hold is gone

  The message is Redisson's '0' (one waiter per process may take the lock), or '1' (every waiter
  looks) while writers wait behind readers that were refused for them.
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
if not count then return nil end
local owner_freed, lock_freed =
  remove_read_hold(KEYS[1], ARGV[1], count, KEYS[3], ARGV[5], tonumber(ARGV[2]), KEYS[4], KEYS[5])
if any then remember_release(KEYS[3], owner_freed, ARGV[4], tonumber(ARGV[2])) end
if lock_freed == 1 then
  redis.call(ARGV[3], KEYS[2], writers_wait(KEYS[6]) > 0 and '1' or '0')
  keep_preference(KEYS[7], KEYS[1], KEYS[6])
end
return owner_freed
