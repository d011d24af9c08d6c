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
for i = 1, #ARGV - 1 do
  local lock, queue, deadlines, marker = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i]
  local owner = ARGV[i + 1]
  purge_dead(queue, deadlines, now)
  if redis.call('zscore', deadlines, owner) then
    redis.call('zadd', deadlines, now + timeout, owner)
    kept[i] = 1
  else
    kept[i] = 0
  end
  hand_on(lock, queue, deadlines, marker, now, timeout)
end
return kept
