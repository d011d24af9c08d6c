--[[
  The waiter that a release handed the lock to takes it over with its own lease.
  KEYS[1..7]  lock hash, queue, deadlines, hand-off marker, channels, Redisson's queue and timeouts
              (see fair/acquire.lua)
  KEYS[8]     the latch key its hold is released with, set when the client withdrew this request
  ARGV[1]  owner id
  ARGV[2]  lease in ms
  ARGV[3]  the mark field of the request the hold is released with (see include/holds.lua)
  Returns  1 when the owner holds the lock now with that lease, 0 when the hand-off was lost (or
           this request was withdrawn: its client gave up on the answer, see fair/withdraw.lua)

  Several waits of one owner share its place in the queue, and one hand-off: the first of them to
  claim it (this confirmation, or an attempt that finds the hand-off marker, see fair/acquire.lua)
  takes it over; a later one is a re-entry and adds a hold. A re-sent copy finds its mark.

  A confirmation that comes after the provisional grant ran out (the owner's process stalled, or
  Redis could not be reached) still takes the lock if it is free and the turn still this owner's:
  nobody took it meanwhile. Otherwise the hand-off is lost; the owner's place, passed over, stays
  for a later wait of the owner until it expires.
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/addresses.lua
--@include include/fair-queue.lua

local lock, queue, deadlines, marker, channels = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease, field = ARGV[1], ARGV[2], ARGV[3]

redisson_side(KEYS[6], KEYS[7], 'publish')
if redis.call('exists', KEYS[8]) == 1 then return 0 end

local count, mark = hold_state(lock, owner, field)
if mark then return 1 end
if count then
  if redis.call('hget', marker, PENDING) == owner then
    claim_handoff(lock, queue, deadlines, marker, channels, owner, lease, field, redis.call('pttl', lock))
    return 1
  end
  -- Claimed already by another wait of this owner: this one holds the lock once more.
  add_hold(lock, owner, count, lease, field, 'a', redis.call('pttl', lock))
  return 1
end
if redis.call('exists', lock) == 1 then return 0 end
if first_in_line(queue, marker, owner) ~= owner then return 0 end
if redis.call('hget', marker, PENDING) == owner then
  redis.call('hdel', marker, PENDING)
end
redis.call('hdel', marker, owner)
add_hold(lock, owner, nil, lease, field, 'a', -2)
remove_place(queue, deadlines, channels, owner)
return 1
