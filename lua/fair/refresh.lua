--[[
  Keep the places of many waiters alive in one call: each client refreshes its own waiters,
  grouped by lock, so a lock's keys are passed once however many of the client's waiters wait on it.
  KEYS[5j-4..5j]  lock hash, queue, deadlines, hand-off marker, hand-off channel of the j-th lock
                  (see fair/acquire.lua)
  ARGV[1]         waiter timeout in ms
  ARGV[2]         'publish', or 'spublish' when notifications are sharded
  ARGV[3..]       for each lock j in KEYS order: the number n of its waiters here, then their n
                  owner ids. Two waiters on lock A and one on B: KEYS = A's 5 keys, B's 5 keys;
                  ARGV = timeout, publish, 2, a1, a2, 1, b1
  Returns         a table, one entry per owner id in ARGV order: 1 the place is kept, 0 it is gone
                  (given up, dropped, or handed the lock)

  A lock's places are refreshed by one ZADD XX CH (XX: a place that is gone is never created
  again). When CH counts every member, every place was kept: the usual answer, with no command per
  waiter. A smaller count does not mean gone: two refreshes within one ms leave a score unchanged,
  so only then is each place looked up. Members go 1000 to a ZADD (Lua's unpack has a limit).

  Dead waiters are dropped on the way, and a lock found free with waiters queued is handed on, so
  a queue whose last holder died (or whose head died) moves again within one refresh period.
]]
--@include include/fair-queue.lua

publish_command = ARGV[2]
local now = server_now()
local timeout = tonumber(ARGV[1])
local deadline = now + timeout
local ZADD_MEMBERS = 1000
local kept = {}
local at = 3
for j = 1, #KEYS / 5 do
  local lock, queue, deadlines = KEYS[5 * j - 4], KEYS[5 * j - 3], KEYS[5 * j - 2]
  local count = tonumber(ARGV[at])
  purge_dead(queue, deadlines, now)
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
  end
  at = at + count + 1
  -- Keep the lock's queue alive, and hand it on if it is free with waiters queued (its last
  -- holder died or ran out).
  keep_alive(queue, ARGV[1])
  keep_alive(deadlines, ARGV[1])
  hand_on(lock, queue, deadlines, KEYS[5 * j - 1], KEYS[5 * j], now, ARGV[1])
end
return kept
