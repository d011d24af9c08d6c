--[[
  Keep the places of many waiters alive in one call: each client refreshes its own waiters.
  KEYS[5i-4..5i]  lock hash, queue, deadlines, hand-off marker, hand-off channel of the i-th
                  waiter's lock (see fair/acquire.lua)
  ARGV[1]         waiter timeout in ms
  ARGV[2]         'publish', or 'spublish' when notifications are sharded
  ARGV[2+i]       the i-th waiting owner id
  Returns         a table: 1 the place is kept, 0 it is gone (given up, dropped, or handed the lock)

  Dead waiters are dropped on the way, and a lock found free with waiters queued is handed on, so
  a queue whose last holder died (or whose head died) moves again within one refresh period.
]]
--@include include/fair-queue.lua

publish_command = ARGV[2]
local now = server_now()
local timeout = tonumber(ARGV[1])
local kept = {}
-- Many waiters of one batch often wait on the same lock: drop its dead waiters only once.
local purged = {}
local waiters = #ARGV - 2
for i = 1, waiters do
  local deadlines = KEYS[5 * i - 2]
  if not purged[deadlines] then
    purged[deadlines] = true
    purge_dead(KEYS[5 * i - 3], deadlines, now)
  end
  -- XX: refresh a place that exists, never create one. CH answers 0 for an unchanged score too
  -- (two refreshes in one ms), so only then is the place looked up.
  local changed = redis.call('zadd', deadlines, 'XX', 'CH', now + timeout, ARGV[i + 2])
  if changed == 1 or redis.call('zscore', deadlines, ARGV[i + 2]) then
    kept[i] = 1
  else
    kept[i] = 0
  end
end
-- Then, once per lock: keep its queue alive, and hand it on if it is free with waiters queued
-- (its last holder died or ran out).
for deadlines in pairs(purged) do
  for i = 1, waiters do
    if KEYS[5 * i - 2] == deadlines then
      keep_alive(KEYS[5 * i - 3], timeout)
      keep_alive(deadlines, timeout)
      hand_on(KEYS[5 * i - 4], KEYS[5 * i - 3], deadlines, KEYS[5 * i - 1], KEYS[5 * i], now, timeout)
      break
    end
  end
end
return kept
