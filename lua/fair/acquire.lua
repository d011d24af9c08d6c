--[[
  One attempt at a fair lock: FIFO among live waiters.
  KEYS[1]  lock hash: field owner id -> hold count (Redisson layout)
  KEYS[2]  queue: list of waiting owner ids, arrival order
  KEYS[3]  deadlines: zset owner id -> server time (ms) when its place expires unless refreshed
  KEYS[4]  hand-off marker: the owner a release handed the lock to, until it confirms
  KEYS[5]  the lock's hand-off channel: waiting clients listen there
  KEYS[6]  hold latch of this request (see include/holds.lua)
  ARGV[1]  lease in ms
  ARGV[2]  owner id
  ARGV[3]  waiter timeout in ms: how long a place lives without a refresh
  ARGV[4]  mode: 'try' (never queue), 'first' (queue when it must wait), 'queued' (already queued)
  ARGV[5]  'publish', or 'spublish' when notifications are sharded
  Returns  nil when acquired, re-entered or handed the lock; otherwise the holder's ttl in ms
           (-1: no expiry), the longest the caller should sleep before trying again; -3 when the
           request was withdrawn before it ran (see fair/withdraw.lua)
]]
--@include include/holds.lua
--@include include/fair-queue.lua

local lock, queue, deadlines, marker, channel, latch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
publish_command = ARGV[5]
local lease, owner, mode = tonumber(ARGV[1]), ARGV[2], ARGV[4]
local now = server_now()
purge_dead(queue, deadlines, now)

local state = redis.call('get', latch)
if state then
  if state == 'w' then return -3 end
  return nil
end

-- A release handed us the lock while we waited (and its message may have been lost): take it.
-- The latch marks it as this request's hold, so that a withdrawal can give it back.
if mode == 'queued' and redis.call('get', marker) == owner and redis.call('hexists', lock, owner) == 1 then
  redis.call('del', marker)
  if lease < redis.call('pttl', lock) then
    recheck_head(lock, queue, channel)
  end
  redis.call('pexpire', lock, lease)
  redis.call('set', latch, 'a', 'px', lease)
  return nil
end

if redis.call('hexists', lock, owner) == 1 then
  add_hold(lock, owner, lease, latch)
  return nil
end

if redis.call('exists', lock) == 0 then
  local head = redis.call('lindex', queue, 0)
  if not head or head == owner then
    add_hold(lock, owner, lease, latch)
    if head then
      redis.call('lpop', queue)
      redis.call('zrem', deadlines, owner)
      -- The next in line may sleep on an older, longer ttl; if this lease ends without a release,
      -- it must wake when it does: tell it to look at the new one.
      recheck_head(lock, queue, channel)
    end
    return nil
  end
end

if mode ~= 'try' then
  local timeout = tonumber(ARGV[3])
  if not redis.call('zscore', deadlines, owner) then
    redis.call('rpush', queue, owner)
  end
  redis.call('zadd', deadlines, now + timeout, owner)
  keep_alive(queue, timeout)
  keep_alive(deadlines, timeout)
end

-- Free, but the turn is another waiter's (the last holder's lease ran out, nobody handed it on):
-- hand it on now, and wait behind it.
hand_on(lock, queue, deadlines, marker, channel, now, tonumber(ARGV[3]))
return redis.call('pttl', lock)
