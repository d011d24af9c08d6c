--[[
  Helpers for the hold counts in a lock hash, shared by the exclusive lock kinds, pasted in where a
  script says "--@include include/holds.lua".

  A latch key belongs to one hold: acquire writes 'a' when the hold is granted, release writes 'r0'
  or 'r1' (its answer) when the hold is released, a withdrawal 'w' when the request was given up
  before it ran. ioredis re-sends a command whose reply a reconnect lost, so a script may run twice
  for one request; the latch makes the second run change nothing.
]]

-- The answer a release already gave for this hold, or nil when it has not run yet.
local function release_replayed(latch)
  local done = redis.call('get', latch)
  if done == 'r0' then return 0 end
  if done == 'r1' then return 1 end
  return nil
end

-- Adds one hold of `owner`. The ttl becomes at least `lease` (a short inner lease never cuts off an
-- outer hold), and the latch lives as long as the lock can without a renewal.
local function add_hold(lock, owner, lease, latch)
  redis.call('hincrby', lock, owner, 1)
  local ttl = redis.call('pttl', lock)
  if ttl < lease then
    ttl = lease
    redis.call('pexpire', lock, ttl)
  end
  redis.call('set', latch, 'a', 'px', ttl)
end

-- Removes one hold of `owner`: nil when it held none, 0 when holds remain (the ttl is left as it
-- is), 1 when that was the last hold and the lock is deleted. The latch remembers the answer for at
-- least `latch_ms`, and while holds remain for as long as the lock lives.
local function remove_hold(lock, owner, latch, latch_ms)
  if redis.call('hexists', lock, owner) == 0 then
    return nil
  end
  if redis.call('hincrby', lock, owner, -1) > 0 then
    redis.call('set', latch, 'r0', 'px', math.max(redis.call('pttl', lock), latch_ms))
    return 0
  end
  redis.call('del', lock)
  redis.call('set', latch, 'r1', 'px', latch_ms)
  return 1
end
