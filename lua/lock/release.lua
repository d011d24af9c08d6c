--[[
  Release one hold of a reentrant lock; the last hold deletes the lock and wakes a waiter.
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  unlock channel (Redisson's redisson_lock__channel:{name})
  KEYS[3]  hold latch of the hold being released (written by acquire.lua)
  ARGV[1]  owner id
  ARGV[2]  how long the latch remembers this release at least, in ms (the released hold's lease);
           while holds remain it is remembered for as long as the lock lives
  ARGV[3]  unlock message (Redisson's 0)
  Returns  1 when the lock is now free, 0 when the owner still holds it, nil when the owner held nothing

  The latch makes a re-sent release answer what the first run answered instead of releasing a
  second hold or reporting "not held". Writes are ordered so that a failure part-way leaves the
  lock held, never freed without a wake-up. Releasing an inner hold leaves the ttl as it is: the
  outer hold keeps the lease it had (or the watchdog's).
]]
local done = redis.call('get', KEYS[3])
if done == 'r0' then return 0 end
if done == 'r1' then return 1 end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return nil
end
local remaining = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if remaining > 0 then
  redis.call('set', KEYS[3], 'r0', 'px', math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[2])))
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[3])
redis.call('set', KEYS[3], 'r1', 'px', ARGV[2])
return 1
