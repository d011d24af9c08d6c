--[[
  The start of every fair-lock attempt (fair/try.lua, fair/acquire.lua), pasted in where a script
  says "--@include include/fair-look.lua", after include/holds.lua.
]]

-- Takes the lock when it is free, this request was not withdrawn and nobody waits, of rlock's or
-- of Redisson's fair lock (queue and deadlines are written together, so an empty queue leaves no
-- dead waiter to drop): all asked in one call. Returns the script's answer and true when that
-- settles the attempt (nil: taken; -3: withdrawn), else the lock's ttl (-2: free, with waiters
-- queued) and false.
local function look_at_fair_lock(lock, queue, latch, field, owner, lease, redisson_queue)
  if redis.call('exists', lock, latch, queue, redisson_queue) == 0 then
    add_hold(lock, owner, nil, lease, field, 'a', -2)
    return nil, true
  end
  if redis.call('exists', latch) == 1 then return -3, true end
  return redis.call('pttl', lock), false
end
