--[[
  One attempt at a fair lock: FIFO among live waiters.
  KEYS[1]  lock hash: field owner id -> hold count (Redisson layout)
  KEYS[2]  queue: list of waiting owner ids, arrival order
  KEYS[3]  deadlines: zset owner id -> server time (ms) when its place expires unless refreshed
  KEYS[4]  hand-off marker: the hand-offs not taken up (see include/fair-queue.lua)
  KEYS[5]  channels: hash owner id -> the address of its client (see include/fair-queue.lua)
  KEYS[6]  Redisson's queue of its fair waiters on the name (redisson_lock_queue:{name})
  KEYS[7]  their timeouts (redisson_lock_timeout:{name}; see include/fair-queue.lua)
  KEYS[8]  the request's latch key (see include/holds.lua)
  ARGV[1]  lease in ms
  ARGV[2]  owner id
  ARGV[3]  waiter timeout in ms: how long a place lives without a refresh
  ARGV[4]  mode: 'try' (never queue), 'first' (queue when it must wait), 'queued' (already queued),
           'reenter' (as 'first', by an owner its client counts as holding: never takes a hand-off
           over)
  ARGV[5]  the request's mark field (see include/holds.lua)
  ARGV[6]  hand-off timeout in ms: how long a hand-off this attempt makes waits for its owner to
           confirm it
  ARGV[7]  the address of this owner's client, where it hears hand-offs (see include/addresses.lua),
           kept with its place
  ARGV[8]  'publish', or 'spublish' when notifications are sharded: how Redisson's waiters are told
  Returns  nil when acquired, re-entered or handed the lock; -5 when acquired by taking over a
           hand-off to this owner (pending, or run out unconfirmed) whose message may still be on
           its way to its client (which must not take it for a later hand-off); otherwise the
           holder's ttl in ms (-1: no expiry), the longest the caller should sleep before trying
           again; -3 when the request was withdrawn before it ran (see fair/withdraw.lua)
]]
--@include include/clock.lua
--@include include/holds.lua
--@include include/fair-look.lua
--@include include/addresses.lua
--@include include/fair-queue.lua

-- The answer of an attempt that took the lock by taking over a hand-off to its owner (see Returns).
local TOOK_HANDOFF = -5

local lock, queue, deadlines, marker, channels, latch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[8]
local lease, owner, mode, field = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
redisson_side(KEYS[6], KEYS[7], ARGV[8])

local ttl, settled = look_at_fair_lock(lock, queue, latch, field, owner, lease, KEYS[6])
if settled then return ttl end

if ttl == -2 then
  -- Free, with waiters queued (a free lock nobody waits for was taken above).
  purge_dead(queue, deadlines, marker, channels, server_ms())
  local lapsed
  if redis.call('exists', marker) == 1 then
    lapsed = settle_lapsed(queue, deadlines, marker, ARGV[6])
    -- An attempt shows its owner is alive: a place passed over is back in line.
    redis.call('hdel', marker, owner)
  end
  local head = first_in_line(queue, marker)
  -- A Redisson waiter ahead of rlock's place in Redisson's queue: the lock is its (hand_on below
  -- tells it). rlock's place at the head: this is rlock's turn, which uses it up.
  local redisson_first = redissons_turn(server_ms())
  if not redisson_first and redis.call('lindex', redisson.queue, 0) == REDISSON_PLACE then
    leave_redisson_queue()
  end
  if not redisson_first and (not head or head == owner) then
    add_hold(lock, owner, nil, lease, field, 'a', ttl)
    if head then
      remove_place(queue, deadlines, channels, owner)
      -- The next in line may sleep on an older, longer ttl; if this lease ends without a release,
      -- it must wake when it does: tell it to look at the new one.
      recheck_head(lock, queue, marker, channels)
    end
    -- Its own hand-off ran out unconfirmed, and it takes the lock now: that hand-off's message
    -- may yet reach its client.
    if lapsed == owner then return TOOK_HANDOFF end
    return nil
  end
else
  local count, mark = hold_state(lock, owner, field)
  if mark then return nil end
  if count then
    -- A release handed us the lock while we waited (and its message may have been lost, or come
    -- too late to trust): take it over with our own lease, marked as this request's hold so that a
    -- withdrawal can give it back. So does a wait's first attempt from the client the hand-off
    -- went to (its address is the place's): a copy of one that queued, re-sent after its reply was
    -- lost, that runs only now. A 'reenter' (an owner its client counts as holding), or a first
    -- attempt of the same owner id from another client, adds its own hold and leaves the hand-off
    -- to the confirmation.
    if (mode == 'queued' or mode == 'first') and redis.call('hget', marker, PENDING) == owner
      and (mode == 'queued' or redis.call('hget', channels, owner) == ARGV[7]) then
      claim_handoff(lock, queue, deadlines, marker, channels, owner, lease, field, ttl)
      return TOOK_HANDOFF
    end
    add_hold(lock, owner, count, lease, field, 'a', ttl)
    return nil
  end
  if mode == 'try' then return ttl end
end

if mode ~= 'try' then
  local now = server_ms()
  local timeout = tonumber(ARGV[3])
  -- A new place (ZADD counts the members it added) joins the tail; a kept one only moves on.
  if redis.call('zadd', deadlines, now + timeout, owner) == 1 then
    redis.call('rpush', queue, owner)
  end
  redis.call('hset', channels, owner, ARGV[7])
  -- Alive: back in line if it was passed over.
  redis.call('hdel', marker, owner)
  keep_queue_alive(queue, deadlines, channels, ARGV[3])
  if ttl ~= -2 then
    -- Held by a client that is not rlock's (Redisson's), or with Redisson's waiters queued: rlock's
    -- waiters keep a place in Redisson's queue, whose release tells that place (the caller listens
    -- there: the answer comes in a table).
    if redis.call('exists', redisson.queue) == 1 or not held_by_rlock(lock, marker) then
      keep_redisson_place(now)
      return { ttl }
    end
    return ttl
  end
end

-- Free, but the turn is another waiter's (the last holder's lease ran out, nobody handed it on, or
-- a Redisson waiter's turn came): hand it on now, and wait behind it, looking again within a
-- hand-off timeout.
hand_on(lock, queue, deadlines, marker, channels, server_ms(), ARGV[6])
local after = redis.call('pttl', lock)
if after == -2 then return { tonumber(ARGV[6]) } end
return after
