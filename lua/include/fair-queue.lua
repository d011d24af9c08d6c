--[[
  Helpers shared by the fair lock scripts, pasted in where a script says
  "--@include include/fair-queue.lua" (after include/addresses.lua). A fair lock `name` has five keys:
    lock       hash at `name`: field owner id -> hold count (Redisson layout)
    queue      list of waiting owner ids, in arrival order. A waiter keeps its place until it takes
               the lock: one that a release handed the lock to stays queued until it confirms.
    deadlines  zset owner id -> server time (ms) when its place expires unless refreshed
    marker     hash of the hand-offs not taken up: field '' (never an owner id) -> the owner a
               release handed the lock to, until it confirms; field <owner> -> 's' for an owner
               whose hand-off ran out unconfirmed: it keeps its place, but is passed over until it
               shows it is alive (an attempt or a confirmation of its own). It lives as long as a
               place does, and is gone when nothing is pending.
    channels   hash owner id -> the address of that waiter's client (see include/addresses.lua),
               written by the attempt that queues it: a message goes to the one client it
               concerns, not to every client with waiters on the lock. Lives as long as the queue.
  and, for Redisson's fair lock (RFairLock) on the same name, Redisson's own two (see
  redisson_side): its waiting threads' queue and their timeouts.
]]

-- The marker's field that names the owner a hand-off waits for.
local PENDING = ''

-- Added to a script's answer when it handed the lock to a waiter: the client that sent it watches
-- that hand-off (see fair/settle.lua).
local HANDED_ON = 2

-- Redisson's fair waiters on the same name queue in Redisson's keys, and Redisson's release tells
-- only the head of that queue, on its own channel. So that a Java service and a Node service
-- sharing a fair lock hand it over at once both ways, rlock's waiters, all together, keep one place
-- in Redisson's queue (REDISSON_PLACE) while Redisson's waiters, or a holder that is not rlock's,
-- share the name; a Redisson release that reaches that place is heard by rlock's clients on its
-- channel, and an rlock release wakes Redisson's head when it is ahead of that place. Each side
-- keeps its own order; the two take turns by the places in Redisson's queue.
local redisson = {}

-- The keys of Redisson's side: its queue (redisson_lock_queue:{name}) and its timeouts
-- (redisson_lock_timeout:{name}: thread -> epoch ms after which Redisson drops it), and the
-- command Redisson's waiters are told with ('publish' or 'spublish'). Every script that may hand
-- the lock on sets them first.
local function redisson_side(queue, timeouts, publish)
  redisson.queue, redisson.timeouts, redisson.publish = queue, timeouts, publish
end

-- rlock's place in Redisson's queue: a thread id no Redisson thread has (theirs are <uuid>:<n>).
local REDISSON_PLACE = 'rlock_fair'
-- How long the place outlives the last refresh of an rlock waiter: as long as a Redisson waiter
-- waits for its turn by default (threadWaitTime, 5 min), plus a refresh period's margin. Redisson
-- takes that much off every waiter behind a thread that acquires, and drops a place whose time is
-- up when it reaches the head: a place of rlock's whose clients are all gone holds Redisson's
-- queue up no longer than a gone Redisson waiter does.
local REDISSON_PLACE_MS = 300000 + 10000

-- The channel Redisson's thread `thread` waits on: redisson_lock__channel:{name}:<thread>.
local function redisson_channel(thread)
  return (string.gsub(redisson.queue, 'redisson_lock_queue:', 'redisson_lock__channel:', 1)) .. ':' .. thread
end

-- The head of Redisson's queue, once the places whose time is up are dropped (as Redisson drops
-- them; by the server's clock here, Redisson's client's there); nil when nobody waits.
local function redisson_head(now)
  while true do
    local head = redis.call('lindex', redisson.queue, 0)
    if not head then return nil end
    local timeout = redis.call('zscore', redisson.timeouts, head)
    if not timeout or tonumber(timeout) > now then return head end
    redis.call('lpop', redisson.queue)
    redis.call('zrem', redisson.timeouts, head)
  end
end

-- Whether a Redisson waiter's turn comes before rlock's: one of them heads Redisson's queue, ahead
-- of rlock's place there (or with none).
local function redissons_turn(now)
  if redis.call('exists', redisson.queue) == 0 then return false end
  local head = redisson_head(now)
  return head ~= nil and head ~= REDISSON_PLACE
end

-- Whether the lock's holder is an rlock client: its holds carry rlock's marks beside the owner's
-- count (see include/holds.lua), two fields at least, where Redisson's hash has its thread's count
-- alone; a grant of rlock's not confirmed yet has no mark, but the marker names it.
local function held_by_rlock(lock, marker)
  if redis.call('hlen', lock) > 1 then return true end
  return redis.call('hexists', marker, PENDING) == 1
end

-- rlock's waiters keep (or take) their place at the back of Redisson's queue.
local function keep_redisson_place(now)
  if redis.call('zadd', redisson.timeouts, now + REDISSON_PLACE_MS, REDISSON_PLACE) == 1 then
    redis.call('rpush', redisson.queue, REDISSON_PLACE)
  end
end

local function leave_redisson_queue()
  redis.call('lrem', redisson.queue, 0, REDISSON_PLACE)
  redis.call('zrem', redisson.timeouts, REDISSON_PLACE)
end

-- With nobody left in rlock's queue, its place in Redisson's goes too: at the head it would keep
-- Redisson's waiters from a free lock.
local function leave_redisson_if_done(queue)
  if redis.call('exists', queue) == 0 and redis.call('exists', redisson.queue) == 1 then
    leave_redisson_queue()
  end
end

-- Tells the client of one waiting owner something about lock `lock`, at its address (none known:
-- nobody is told). `kind`: 'granted' (the lock is the owner's now) or 'recheck' (look again).
local function notify(channels, owner, kind, lock)
  send_to(redis.call('hget', channels, owner), kind .. '\n' .. owner .. '\n' .. lock)
end

-- The queue, deadline and channel keys outlive their last live waiter by at most a waiter
-- timeout: a write gives them `ms` more once less than half of it is left (never less: clients may
-- run with different timeouts), so a queue whose waiters all died is gone within one timeout even
-- if nobody touches the lock again, and a live waiter, whose client refreshes its place every third
-- of its timeout, never outlives them. The three are written together, so the queue's ttl speaks
-- for all.
local function keep_alive(key, ms)
  if redis.call('pttl', key) < tonumber(ms) then
    redis.call('pexpire', key, ms)
  end
end

local function keep_queue_alive(queue, deadlines, channels, ms)
  if redis.call('pttl', queue) < tonumber(ms) / 2 then
    redis.call('pexpire', queue, ms)
    redis.call('pexpire', deadlines, ms)
    redis.call('pexpire', channels, ms)
  end
end

-- Drops the waiters whose clients stopped refreshing their places; true when there were any.
local function purge_dead(queue, deadlines, marker, channels, now)
  local dead = redis.call('zrangebyscore', deadlines, '-inf', now)
  for _, owner in ipairs(dead) do
    redis.call('lrem', queue, 1, owner)
    redis.call('zrem', deadlines, owner)
    redis.call('hdel', marker, owner)
    redis.call('hdel', channels, owner)
  end
  if #dead > 0 then leave_redisson_if_done(queue) end
  return #dead > 0
end

-- The first queued owner whose turn it can be: not passed over, not waiting for a hand-off of its
-- own (except `alive`, an owner known to be alive whatever the marker says); nil when there is none.
local function first_in_line(queue, marker, alive)
  if redis.call('exists', marker) == 0 then return redis.call('lindex', queue, 0) end
  local pending = redis.call('hget', marker, PENDING)
  local from = 0
  while true do
    local owners = redis.call('lrange', queue, from, from + 15)
    if #owners == 0 then return nil end
    local passed = redis.call('hmget', marker, unpack(owners))
    for i, owner in ipairs(owners) do
      -- A missing field reads false (in ioredis-mock's Lua, some other value that is not a string).
      if owner == alive or (type(passed[i]) ~= 'string' and owner ~= pending) then return owner end
    end
    from = from + 16
  end
end

-- The owner's place is over: it takes the lock, or leaves.
local function remove_place(queue, deadlines, channels, owner)
  redis.call('lrem', queue, 1, owner)
  redis.call('zrem', deadlines, owner)
  redis.call('hdel', channels, owner)
end

-- Tells the first in line to look again: the lock's ttl it last saw may be a hand-off's
-- provisional one, and the shorter lease that replaces it may end without a release.
local function recheck_head(lock, queue, marker, channels)
  local head = first_in_line(queue, marker)
  if head then
    notify(channels, head, 'recheck', lock)
  end
end

-- The owner a release handed the lock to takes it over with its own lease, marked as the hold of
-- request `field`. `ttl` is the lock's (the provisional grant's).
local function claim_handoff(lock, queue, deadlines, marker, channels, owner, lease, field, ttl)
  redis.call('hdel', marker, PENDING)
  remove_place(queue, deadlines, channels, owner)
  if tonumber(lease) < ttl then
    recheck_head(lock, queue, marker, channels)
  end
  redis.call('hset', lock, field, 'a')
  redis.call('pexpire', lock, lease)
end

-- The marker lives as long as the queue, whose ttl the refresh of every place extends (and at
-- least `floor_ms`): a waiter stays passed over while its place may live.
local function keep_marker(marker, queue, floor_ms)
  local ttl = math.max(redis.call('pttl', queue), tonumber(floor_ms))
  if redis.call('pttl', marker) < ttl then
    redis.call('pexpire', marker, ttl)
  end
end

-- A hand-off that ran out unconfirmed (the lock is free: its provisional grant expired) is over.
-- Its owner keeps its place but is passed over until it shows it is alive: a waiter that is gone
-- costs the queue one hand-off timeout, once, and a live one that was slow loses nothing.
-- Returns the owner of that hand-off, if any.
local function settle_lapsed(queue, deadlines, marker, handoff_ms)
  local owner = redis.call('hget', marker, PENDING)
  if not owner then return nil end
  redis.call('hdel', marker, PENDING)
  if redis.call('zscore', deadlines, owner) then
    redis.call('hset', marker, owner, 's')
    keep_marker(marker, queue, handoff_ms)
  end
  return owner
end

-- When the lock is free (`free`: the caller knows it is), grants it to the first in line and tells that owner's client, so the
-- woken waiter holds the lock without another round trip. The grant is provisional (ttl
-- `handoff_ms`, marker set) until the owner confirms it with its own lease; the owner stays queued
-- meanwhile. Whoever's script made the grant watches it: if it is not taken up (its waiter is
-- gone), that client has fair/settle.lua hand the lock on once the grant has run out. Returns true
-- when it granted the lock. `handoff_ms` may be the script's argument as sent: text goes to Redis
-- as it is, a Lua number through sprintf. `marked`, when the caller knows it: whether the marker
-- exists (read once per script on the path of every hand-off). `queue_head`, when the caller read
-- it and knows that neither a marker nor Redisson's queue exists: the head of the queue (no read of
-- either is needed then, unless a waiter is dropped).
local function hand_on(lock, queue, deadlines, marker, channels, now, handoff_ms, free, marked, queue_head)
  if not free and redis.call('exists', lock) == 1 then return false end
  -- A waiter dropped takes its field of the marker with it: the marker may be gone now, and the
  -- head read before may be gone with it.
  if purge_dead(queue, deadlines, marker, channels, now) then
    marked, queue_head = nil, nil
  end
  local redissons_turn = false
  local redisson_waits = not queue_head and redis.call('exists', redisson.queue) == 1
  if redisson_waits then
    local head = redisson_head(now)
    if head == REDISSON_PLACE and redis.call('exists', queue) == 0 then
      -- rlock's place, with nobody of rlock's left to take its turn: it goes, and the turn is the
      -- next Redisson waiter's.
      leave_redisson_queue()
      head = redisson_head(now)
    end
    if head == REDISSON_PLACE then
      -- rlock's turn: its place is used up, and taken again behind Redisson's waiters below.
      leave_redisson_queue()
    elseif head then
      -- A Redisson waiter queued ahead of rlock's place: told as Redisson's release tells it.
      redis.call(redisson.publish, redisson_channel(head), '0')
      redissons_turn = true
    end
  end
  if redissons_turn then
    if redis.call('exists', queue) == 1 then keep_redisson_place(now) end
    return false
  end
  local fresh
  if queue_head then fresh = true
  elseif marked == nil then fresh = redis.call('exists', marker) == 0
  else fresh = not marked end
  local head = queue_head
  if head then
    -- Read by the caller: nothing pending, nobody dropped.
  elseif fresh then
    -- Nothing pending or passed over, the common case: the head's turn.
    head = redis.call('lindex', queue, 0)
  else
    settle_lapsed(queue, deadlines, marker, handoff_ms)
    head = first_in_line(queue, marker)
  end
  if not head then return false end
  redis.call('hset', lock, head, '1')
  redis.call('pexpire', lock, handoff_ms)
  redis.call('hset', marker, PENDING, head)
  if fresh then
    -- Only this hand-off in it: it is settled (confirmed, or passed over) within a hand-off timeout
    -- or so; a waiter passed over then makes the marker live as long as the queue (keep_marker).
    redis.call('pexpire', marker, 3 * tonumber(handoff_ms))
  else
    keep_marker(marker, queue, handoff_ms)
  end
  notify(channels, head, 'granted', lock)
  -- Others of rlock's wait behind Redisson's waiters: they take the next turn after them.
  if redisson_waits and redis.call('exists', redisson.queue) == 1 and redis.call('llen', queue) > 1 then
    keep_redisson_place(now)
  end
  return true
end

-- After `owner`'s last hold is gone, when a marker or a queue (rlock's or Redisson's) exists (its caller checks: with
-- neither, the common case, a script need not define these helpers at all): a hand-off to `owner`
-- that it had not confirmed is used up, and the lock goes straight to the next waiter, if any.
-- `queue_head`: see hand_on (nothing is pending then: no marker).
local function hand_on_released(lock, queue, deadlines, marker, channels, owner, handoff_ms, queue_head)
  if queue_head then
    return hand_on(lock, queue, deadlines, marker, channels, server_ms(), handoff_ms, true, false, queue_head)
  end
  -- Without a marker, the common case, nothing is pending: one read instead of two.
  local marked = redis.call('exists', marker) == 1
  if marked and redis.call('hget', marker, PENDING) == owner then
    redis.call('hdel', marker, PENDING)
    remove_place(queue, deadlines, channels, owner)
    if redis.call('exists', queue, redisson.queue) == 0 then return false end
    marked = nil
  end
  return hand_on(lock, queue, deadlines, marker, channels, server_ms(), handoff_ms, true, marked)
end
