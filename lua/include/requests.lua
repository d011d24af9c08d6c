--[[
  Request latches of the synchronizers (semaphores, count-down latch), pasted in where a script says
  "--@include include/requests.lua" (after include/clock.lua).

  A semaphore or a latch is a bare counter (Redisson's layout), with no room for the marks a lock
  keeps in its hash (see include/holds.lua). So every script that changes a counter takes the
  latch of its request, a key unique to it (rlock_request_latch:{name}:<client>:<n>), and writes
  its answer there when it takes effect. ioredis re-sends a command whose reply a reconnect lost,
  rlock sends a request again when it cannot tell whether it ran, and a paused server runs what
  waited in its socket when it resumes: the copy finds the latch and answers what the first run
  answered, changing nothing.
  That holds only while the latch lives, and a copy may run any time later: so every copy carries
  its request's window, the server time (ms) until which it may take effect. A copy that finds no
  answer acts inside the window only, and fails with a LATE error after it; the answer it writes
  lives latch_ms past the window's end (for a withdrawal to find, see semaphore/withdraw.lua). So a
  copy that acts always finds the answer of any copy that acted before it, whenever each ran.
  Values: 'w' the request was withdrawn (a copy that runs later takes nothing); anything else is
  the first run's answer.
]]

-- The answer the first run of request `latch` gave, or nil when no run took effect yet. A copy
-- that finds none after its window (`until_ms`, server ms) takes no effect: it fails LATE.
local function earlier_answer(latch, until_ms)
  local answer = redis.call('get', latch)
  if type(answer) == 'string' then return answer end
  if server_ms() > tonumber(until_ms) then
    error({ err = 'LATE this copy of the request reached Redis after its window closed; it took no effect' })
  end
  return nil
end

-- Remembers that request `latch` took effect and answered `answer`, and returns `answer`: until
-- `latch_ms` past the end of its window (`until_ms`), longer than any copy of it may act.
local function remember(latch, answer, until_ms, latch_ms)
  redis.call('set', latch, answer, 'pxat', tonumber(until_ms) + tonumber(latch_ms))
  return answer
end
