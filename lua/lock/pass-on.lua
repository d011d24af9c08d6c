--[[
  Passes a wake-up of a reentrant lock (getLock) on: sent by a client that was woken and has no
  wait on the lock any more, or one hand-off timeout after a client's release woke another (in case
  that client could not act on it: its process stopped, or lost its connection).
  KEYS[1]  lock hash
  KEYS[2]  the lock's waiters (see include/lock-waiters.lua)
  ARGV[1]  the sender's address (see include/addresses.lua), whose entry goes (it waits no more);
           '' when it is not the sender's
  Returns  2 (HANDED_ON) when the lock is free and a waiting client was woken, 0 otherwise
]]
--@include include/clock.lua
--@include include/addresses.lua
--@include include/lock-waiters.lua

if ARGV[1] ~= '' then redis.call('zrem', KEYS[2], ARGV[1]) end
if redis.call('exists', KEYS[1]) == 1 then return 0 end
return wake_waiter(KEYS[2], KEYS[1]) and 2 or 0
