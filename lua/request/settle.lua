--[[
  Settle a request that went unanswered (a release, addPermits, countDown, ...: one whose latch
  remembers its answer, see include/requests.lua and include/holds.lua): whether it took effect, and
  if it did not, that it never will. rlock sends a new request then, so that the change counts once
  however long Redis was out of reach.
  KEYS[1]  the request's latch
  ARGV[1]  the request's window: server time (ms) after which no copy of it takes effect
  ARGV[2]  how long its latch outlives the window, in ms
  Returns  the latch's value when the request took effect (the answer its script remembered);
           'w' when it had not: the latch says so from now on, so every copy that runs later takes
           nothing, and after the latch is gone its window is long closed; nil when nobody can tell
           any more: the latch's life is over, and whatever it remembered went with it
]]
--@include include/clock.lua

local answer = redis.call('get', KEYS[1])
if type(answer) == 'string' then return answer end
local forgotten = tonumber(ARGV[1]) + tonumber(ARGV[2])
if server_ms() >= forgotten then return nil end
redis.call('set', KEYS[1], 'w', 'pxat', forgotten)
return 'w'
