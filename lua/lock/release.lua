--[[
  Release one hold of a reentrant lock; the last hold deletes the lock and wakes a waiter.
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  unlock channel (Redisson's redisson_lock__channel:{name})
  KEYS[3]  hold latch of the hold being released (written by acquire.lua)
  ARGV[1]  owner id
  ARGV[2]  how long the latch remembers this release at least, in ms (the released hold's lease)
  ARGV[3]  unlock message (Redisson's 0)
  ARGV[4]  'publish', or 'spublish' when notifications are sharded (a cluster's shard channels)
  Returns  1 when the lock is now free, 0 when the owner still holds it, nil when the owner held nothing

  A re-sent release answers what the first run answered instead of releasing a second hold or
  reporting "not held". Releasing an inner hold leaves the ttl as it is: the outer hold keeps the
  lease it had (or the watchdog's).
]]
--@include include/holds.lua

local replayed = release_replayed(KEYS[3])
if replayed then return replayed end
local freed = remove_hold(KEYS[1], ARGV[1], KEYS[3], tonumber(ARGV[2]))
if freed == 1 then
  redis.call(ARGV[4], KEYS[2], ARGV[3])
end
return freed
