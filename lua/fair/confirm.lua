--[[
  The waiter that a release handed the lock to takes it over with its own lease.
  KEYS[1..5]  lock hash, queue, deadlines, hand-off marker, hand-off channel (see fair/acquire.lua)
  KEYS[6]     the latch key its hold is released with (not read here: the fair scripts share one key list)
  ARGV[1]  owner id
  ARGV[2]  lease in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  ARGV[4]  the mark field of the request the hold is released with (see include/holds.lua)
  Returns  1 when the owner holds the lock now with that lease, 0 when the hand-off was lost

  Several waits of one owner share its place in the queue, and one hand-off: the first of them to
  claim it (this confirmation, or an attempt that finds the hand-off marker, see fair/acquire.lua)
  takes it over; a later one is a re-entry and adds a hold. A re-sent copy finds its mark.
]]
--@include include/holds.lua
--@include include/fair-queue.lua

publish_command = ARGV[3]
local lock, queue, marker, channel = KEYS[1], KEYS[2], KEYS[4], KEYS[5]
local owner, lease, field = ARGV[1], ARGV[2], ARGV[4]

local count, mark = hold_state(lock, owner, field)
if not count then return 0 end
if mark then return 1 end
if redis.call('get', marker) == owner then
  redis.call('del', marker)
  local ttl = redis.call('pttl', lock)
  if tonumber(lease) < ttl then
    recheck_head(lock, queue, channel)
  end
  redis.call('hset', lock, field, 'a')
  redis.call('pexpire', lock, lease)
  return 1
end
-- Claimed already by another wait of this owner: this one holds the lock once more.
add_hold(lock, owner, count, lease, field, 'a', redis.call('pttl', lock))
return 1
