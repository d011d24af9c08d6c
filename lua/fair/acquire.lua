--[[
  One attempt at a fair lock: FIFO among live waiters.
  KEYS[1]  lock hash: field owner id -> hold count (Redisson layout)
  KEYS[2]  queue: list of waiting owner ids, arrival order
  KEYS[3]  deadlines: zset owner id -> server time (ms) when its place expires unless refreshed
  KEYS[4]  hand-off marker: the owner a release handed the lock to, until it confirms
  KEYS[5]  the lock's hand-off channel: waiting clients listen there
  KEYS[6]  the request's latch key (see include/holds.lua)
  ARGV[1]  lease in ms
  ARGV[2]  owner id
  ARGV[3]  waiter timeout in ms: how long a place lives without a refresh
  ARGV[4]  mode: 'try' (never queue), 'first' (queue when it must wait), 'queued' (already queued)
  ARGV[5]  'publish', or 'spublish' when notifications are sharded
  ARGV[6]  the request's mark field (see include/holds.lua)
  Returns  nil when acquired, re-entered or handed the lock; otherwise the holder's ttl in ms
           (-1: no expiry), the longest the caller should sleep before trying again; -3 when the
           request was withdrawn before it ran (see fair/withdraw.lua)
]]
--@include include/holds.lua
--@include include/fair-look.lua
--@include include/fair-queue.lua

local lock, queue, deadlines, marker, channel, latch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
publish_command = ARGV[5]
local lease, owner, mode, field = ARGV[1], ARGV[2], ARGV[4], ARGV[6]

local ttl, settled = look_at_fair_lock(lock, queue, latch, field, owner, lease)
if settled then return ttl end

if ttl == -2 then
  -- Free, with waiters queued (a free lock nobody waits for was taken above).
  purge_dead(queue, deadlines, server_now())
  local head = redis.call('lindex', queue, 0)
  if not head or head == owner then
    add_hold(lock, owner, nil, lease, field, 'a', ttl)
    if head then
      redis.call('lpop', queue)
      redis.call('zrem', deadlines, owner)
      -- The next in line may sleep on an older, longer ttl; if this lease ends without a release,
      -- it must wake when it does: tell it to look at the new one.
      recheck_head(lock, queue, channel)
    end
    return nil
  end
else
  local count, mark = hold_state(lock, owner, field)
  if mark then return nil end
  if count then
    -- A release handed us the lock while we waited (and its message may have been lost): take it
    -- over with our own lease, marked as this request's hold so that a withdrawal can give it back.
    if mode == 'queued' and redis.call('get', marker) == owner then
      redis.call('del', marker)
      if tonumber(lease) < ttl then
        recheck_head(lock, queue, channel)
      end
      redis.call('hset', lock, field, 'a')
      redis.call('pexpire', lock, lease)
      return nil
    end
    add_hold(lock, owner, count, lease, field, 'a', ttl)
    return nil
  end
  if mode == 'try' then return ttl end
end

if mode ~= 'try' then
  local now = server_now()
  local timeout = tonumber(ARGV[3])
  if not redis.call('zscore', deadlines, owner) then
    redis.call('rpush', queue, owner)
  end
  redis.call('zadd', deadlines, now + timeout, owner)
  keep_alive(queue, ARGV[3])
  keep_alive(deadlines, ARGV[3])
  if ttl ~= -2 then return ttl end
end

-- Free, but the turn is another waiter's (the last holder's lease ran out, nobody handed it on):
-- hand it on now, and wait behind it.
hand_on(lock, queue, deadlines, marker, channel, server_now(), ARGV[3])
return redis.call('pttl', lock)
