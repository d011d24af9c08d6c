--[[
  Helpers shared by the fair lock scripts, pasted in where a script says
  "--@include include/fair-queue.lua". A fair lock `name` has four keys and a channel:
    lock       hash at `name`: field owner id -> hold count (Redisson layout)
    queue      list of waiting owner ids, in arrival order
    deadlines  zset owner id -> server time (ms) when its place expires unless refreshed
    marker     the owner a release handed the lock to, until that owner confirms
    channel    where hand-offs are announced: the clients with waiters on this lock listen there
  A script that may announce sets `publish_command` first (from its ARGV).
]]

-- 'publish', or 'spublish' when notifications are sharded (a cluster's shard channel, in the
-- lock's slot).
local publish_command = 'publish'

-- Server time in ms: deadlines never depend on client clocks.
local function server_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Tells one waiting owner something about lock `lock`: 'granted' or 'recheck'. The message names
-- the owner: of the clients listening, only the one with that waiter acts on it.
local function notify(channel, owner, kind, lock)
  redis.call(publish_command, channel, kind .. '\n' .. owner .. '\n' .. lock)
end

-- Tells the head of the queue to look again: the lock's ttl it last saw may be a hand-off's
-- provisional one, and the shorter lease that replaces it may end without a release.
local function recheck_head(lock, queue, channel)
  local head = redis.call('lindex', queue, 0)
  if head then
    notify(channel, head, 'recheck', lock)
  end
end

-- The queue and deadline keys outlive their last live waiter by at most a waiter timeout: every
-- write gives them at least `ms` more, never less (clients may run with different timeouts), so a
-- queue whose waiters all died is gone within one timeout even if nobody touches the lock again.
local function keep_alive(key, ms)
  if redis.call('pttl', key) < tonumber(ms) then
    redis.call('pexpire', key, ms)
  end
end

-- Drops the waiters whose clients stopped refreshing their places.
local function purge_dead(queue, deadlines, now)
  local dead = redis.call('zrangebyscore', deadlines, '-inf', now)
  for _, owner in ipairs(dead) do
    redis.call('lrem', queue, 1, owner)
    redis.call('zrem', deadlines, owner)
  end
end

-- When the lock is free, grants it to the head of the queue and tells the head's client, so the
-- woken waiter holds the lock without another round trip. The grant is provisional (ttl = the
-- waiter timeout, marker set) until the head confirms it with its own lease: a head that died
-- meanwhile blocks the queue no longer than any dead waiter would. `provisional_ms` may be the
-- script's argument as sent: text goes to Redis as it is, a Lua number through sprintf.
local function hand_on(lock, queue, deadlines, marker, channel, now, provisional_ms)
  if redis.call('exists', lock) == 1 then return end
  purge_dead(queue, deadlines, now)
  local head = redis.call('lpop', queue)
  if not head then return end
  redis.call('zrem', deadlines, head)
  redis.call('hset', lock, head, '1')
  redis.call('pexpire', lock, provisional_ms)
  redis.call('set', marker, head, 'px', provisional_ms)
  notify(channel, head, 'granted', lock)
end

-- After `owner`'s last hold is gone: a hand-off marker naming it is void, and the lock goes
-- straight to the next waiter, if any.
local function hand_on_released(lock, queue, deadlines, marker, channel, owner, provisional_ms)
  -- No hand-off pending and nobody waiting, the common case: one call says so.
  if redis.call('exists', marker, queue) == 0 then return end
  if redis.call('get', marker) == owner then
    redis.call('del', marker)
  end
  if redis.call('exists', queue) == 1 then
    hand_on(lock, queue, deadlines, marker, channel, server_now(), provisional_ms)
  end
end
