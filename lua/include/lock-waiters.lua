--[[
  The clients waiting for a reentrant lock (getLock), pasted in where a script says
  "--@include include/lock-waiters.lua" (after include/clock.lua and include/addresses.lua). Redisson's release message wakes one waiter in every
  process subscribed to the lock's channel, so on a busy lock every release made each waiting
  process try, and all but one fail. rlock's waiters do not listen there while an rlock client
  holds the lock: each client with waiters on it keeps an entry here, and a release wakes one
  client, at its address (see include/addresses.lua).
    waiters  zset: a client's address -> server ms when it began waiting, or was last woken;
             the oldest is woken first, and goes to the back: a client that does not take the lock
             (another took it first, or its process stopped) is not woken again before the others
  The message is "wake\n<lock key>". Redisson's own message goes out as before, for the waiters
  that do listen on the lock's channel (Redisson's, and rlock's behind a holder that is not rlock's).
]]

-- How long the entry of a client that stopped waiting (its process gone) can outlive its last
-- attempt, in ms: a wait tries again at least once per watchdog timeout, renewing it.
local WAITERS_LIVE_MS = 120000

-- Wakes the client that has waited longest, skipping (and dropping) those nobody listens for any
-- more (a process that is gone: its subscriber connection closed). Returns true when one was told.
local function wake_waiter(waiters, lock)
  while true do
    local first = redis.call('zrange', waiters, 0, 0)[1]
    if not first then return false end
    if send_to(first, 'wake\n' .. lock) then
      redis.call('zadd', waiters, 'XX', server_ms(), first)
      return true
    end
    redis.call('zrem', waiters, first)
  end
end
