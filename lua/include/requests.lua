--[[
  Request latches of the synchronizers (semaphores, count-down latch), pasted in where a script says
  "--@include include/requests.lua".

  A semaphore or a latch is a bare counter (Redisson's layout), with no room for the marks a lock
  keeps in its hash (see include/holds.lua). So every script that changes a counter takes the
  latch of its request, a key unique to it (rlock_request_latch:{name}:<client>:<n>), and writes
  its answer there when it takes effect. ioredis re-sends a command whose reply a reconnect lost,
  and rlock sends a request again when it cannot tell whether it ran: the copy finds the latch and
  answers what the first run answered, changing nothing. The latch lives `latch_ms`, longer than
  any copy can arrive (rlock stops sending again by then).
  Values: 'w' the request was withdrawn (a copy that runs later takes nothing); anything else is
  the first run's answer.
]]

-- The answer the first run of request `latch` gave, or nil when no run took effect yet.
local function earlier_answer(latch)
  local answer = redis.call('get', latch)
  if type(answer) ~= 'string' then return nil end
  return answer
end

-- Remembers that request `latch` took effect and answered `answer`.
local function remember(latch, answer, latch_ms)
  redis.call('set', latch, answer, 'px', latch_ms)
end
