--[[
  Keep the places of many waiters alive in one call: each client refreshes its own waiters.
  KEYS[4i-3..4i]  lock hash, queue, deadlines, hand-off marker of the i-th waiter's lock
  ARGV[1]         waiter timeout in ms
  ARGV[1+i]       the i-th waiting owner id
  Returns         a table: 1 the place is kept, 0 it is gone (given up, dropped, or handed the lock)

  Dead waiters are dropped on the way, and a lock found free with waiters queued is handed on, so
  a queue whose last holder died (or whose head died) moves again within one refresh period.
]]
--@include include/fair-queue.lua

local now = server_now()
local timeout = tonumber(ARGV[1])
local kept = {}
-- Many waiters of one batch often wait on the same lock: drop its dead waiters only once.
local purged = {}
for i = 1, #ARGV - 1 do
  local deadlines = KEYS[4 * i - 1]
  if not purged[deadlines] then
    purged[deadlines] = true
    purge_dead(KEYS[4 * i - 2], deadlines, now)
  end
  -- XX: refresh a place that exists, never create one. CH answers 0 for an unchanged score too
  -- (two refreshes in one ms), so only then is the place looked up.
  local changed = redis.call('zadd', deadlines, 'XX', 'CH', now + timeout, ARGV[i + 1])
  if changed == 1 or redis.call('zscore', deadlines, ARGV[i + 1]) then
    kept[i] = 1
  else
    kept[i] = 0
  end
end
-- Then hand on every lock that is free with waiters queued (its last holder died or ran out).
for deadlines in pairs(purged) do
  for i = 1, #ARGV - 1 do
    if KEYS[4 * i - 1] == deadlines then
      hand_on(KEYS[4 * i - 3], KEYS[4 * i - 2], deadlines, KEYS[4 * i], now, timeout)
      break
    end
  end
end
return kept
