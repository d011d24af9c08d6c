--[[
  A fair lock's first attempt, which never queues: fair/acquire.lua's 'try' with only the keys a
  free or re-entered lock needs, so that the most common call sends half the arguments.
  KEYS[1]  lock hash: field owner id -> hold count (Redisson layout)
  KEYS[2]  queue: list of waiting owner ids, arrival order
  KEYS[3]  the request's latch key (see include/holds.lua)
  KEYS[4]  Redisson's queue of its fair waiters on the name (see include/fair-queue.lua)
  ARGV[1]  lease in ms
  ARGV[2]  owner id
  ARGV[3]  the request's mark field (see include/holds.lua)
  Returns  nil when acquired or re-entered; otherwise the holder's ttl in ms (-1: no expiry); -3
           when the request was withdrawn before it ran (see fair/withdraw.lua); -4 when the lock
           is free but waiters are queued (rlock's or Redisson's): whose turn it is takes
           fair/acquire.lua (it may drop dead waiters and announce), which the caller sends next
           (this one wrote nothing)
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/fair-look.lua

local lock, queue, latch = KEYS[1], KEYS[2], KEYS[3]
local lease, owner, field = ARGV[1], ARGV[2], ARGV[3]

local ttl, settled = look_at_fair_lock(lock, queue, latch, field, owner, lease, KEYS[4])
if settled then return ttl end
if ttl == -2 then return -4 end
local count, mark = hold_state(lock, owner, field)
if mark then return nil end
if count then
  add_hold(lock, owner, count, lease, field, 'a', ttl)
  return nil
end
return ttl
