--[[
  The waiter that a release handed the lock to takes it over with its own lease.
  KEYS[1..5]  lock hash, queue, deadlines, hand-off marker, hand-off channel (see fair/acquire.lua)
  KEYS[6]     the latch its hold is released with: the hold is marked under it (see include/holds.lua)
  ARGV[1]  owner id
  ARGV[2]  lease in ms
  ARGV[3]  'publish', or 'spublish' when notifications are sharded
  Returns  1 when the owner holds the lock now with that lease, 0 when the hand-off was lost
]]
--@include include/fair-queue.lua

publish_command = ARGV[3]

if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('get', KEYS[4]) == ARGV[1] then
  redis.call('del', KEYS[4])
  if tonumber(ARGV[2]) < redis.call('pttl', KEYS[1]) then
    recheck_head(KEYS[1], KEYS[2], KEYS[5])
  end
  redis.call('pexpire', KEYS[1], ARGV[2])
end
redis.call('hset', KEYS[1], KEYS[6], 'a')
return 1
