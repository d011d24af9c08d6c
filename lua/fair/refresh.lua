--[[
  Keep the places of many waiters alive in one call: each client refreshes its own waiters,
  grouped by lock, so a lock's keys are passed once however many of the client's waiters wait on it.
  KEYS[7j-6..7j]  lock hash, queue, deadlines, hand-off marker, channels, Redisson's queue and
                  timeouts of the j-th lock (see fair/acquire.lua)
                  (see fair/acquire.lua)
  ARGV[1]         waiter timeout in ms
  ARGV[2]         hand-off timeout in ms (the provisional lease of a hand-off)
  ARGV[3]         'publish', or 'spublish' when notifications are sharded: how Redisson's waiters
                  are told
  ARGV[4..]       for each lock j in KEYS order: the number n of its waiters here, then their n
                  owner ids. Two waiters on lock A and one on B: KEYS = A's 5 keys, B's 5 keys;
                  ARGV = timeout, hand-off timeout, publish, 2, a1, a2, 1, b1
  Returns         a table, one entry per owner id in ARGV order: 1 the place is kept, 0 its waiter
                  must look again: the place is gone (given up, dropped, or the lock taken), or a
                  hand-off to it is pending or was passed over (the client may not know of it);
                  then one entry per lock: HANDED_ON (2) when this call handed that lock to a
                  waiter (the client watches the hand-off, see fair/settle.lua), else 0

  A lock's places are refreshed by one ZADD XX CH (XX: a place that is gone is never created
  again). When CH counts every member, every place was kept: the usual answer, with no command per
  waiter. A smaller count does not mean gone: two refreshes within one ms leave a score unchanged,
  so only then is each place looked up. Members go 1000 to a ZADD (Lua's unpack has a limit).

  Dead waiters are dropped on the way, and a lock found free with waiters queued is handed on, so
  a queue whose last holder died (or whose head died) moves again within one refresh period.
]]
--@include include/clock.lua
--@include include/addresses.lua
--@include include/fair-queue.lua

local now = server_ms()
local timeout = tonumber(ARGV[1])
local deadline = now + timeout
local ZADD_MEMBERS = 1000
local kept = {}
local handed = {}
local at = 4
for j = 1, #KEYS / 7 do
  local lock, queue, deadlines, marker, channels =
    KEYS[7 * j - 6], KEYS[7 * j - 5], KEYS[7 * j - 4], KEYS[7 * j - 3], KEYS[7 * j - 2]
  redisson_side(KEYS[7 * j - 1], KEYS[7 * j], ARGV[3])
  local count = tonumber(ARGV[at])
  purge_dead(queue, deadlines, marker, channels, now)
  local marked = redis.call('exists', marker) == 1
  for first = at + 1, at + count, ZADD_MEMBERS do
    local last = math.min(first + ZADD_MEMBERS - 1, at + count)
    local args = {}
    for i = first, last do
      args[#args + 1] = deadline
      args[#args + 1] = ARGV[i]
    end
    local changed = redis.call('zadd', deadlines, 'XX', 'CH', unpack(args))
    for i = first, last do
      if changed == last - first + 1 or redis.call('zscore', deadlines, ARGV[i]) then
        kept[#kept + 1] = 1
      else
        kept[#kept + 1] = 0
      end
    end
    if marked then
      -- A waiter whose hand-off is pending or was passed over looks again: an attempt of its own
      -- claims the hand-off, or puts it back in line.
      local owners = { unpack(ARGV, first, last) }
      local passed = redis.call('hmget', marker, unpack(owners))
      local pending = redis.call('hget', marker, PENDING)
      for i, owner in ipairs(owners) do
        if type(passed[i]) == 'string' or owner == pending then
          kept[#kept - #owners + i] = 0
        end
      end
    end
  end
  at = at + count + 1
  -- Keep the lock's queue alive, and hand it on if it is free with waiters queued (its last
  -- holder died or ran out).
  keep_queue_alive(queue, deadlines, channels, ARGV[1])
  if marked then keep_alive(marker, ARGV[1]) end
  -- rlock's place in Redisson's queue, if it has one, lives as long as its waiters do.
  if redis.call('exists', redisson.queue) == 1 and redis.call('zscore', redisson.timeouts, REDISSON_PLACE) then
    keep_redisson_place(now)
  end
  handed[j] = hand_on(lock, queue, deadlines, marker, channels, now, ARGV[2]) and HANDED_ON or 0
end
for _, flag in ipairs(handed) do kept[#kept + 1] = flag end
return kept
