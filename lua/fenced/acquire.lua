--[[
  Acquire or re-enter a fenced lock: the reentrant lock (Redisson RFencedLock layout) plus a
  fencing token that grows with every acquisition, re-entries included.
  KEYS[1]  lock hash: field owner id -> hold count
  KEYS[2]  the request's latch key (see include/holds.lua)
  KEYS[3]  token counter (Redisson's redisson_lock_token:{name})
  ARGV[1]  lease in ms
  ARGV[2]  owner id
  ARGV[3]  the request's mark field (see include/holds.lua): the mark keeps the token it handed out
  Returns  {1, token} when acquired or re-entered; {0, ttl} when another owner holds the lock
           (ttl in ms, -1: no expiry); {0, -3} when the request was withdrawn before it ran

  Tokens never go backwards, even when Redis lost the counter (a restart without persistence): a
  new token is the counter + 1 or the server's clock in microseconds, whichever is larger. Every
  token handed out so far was at most the clock of its moment (plus the few issued within one
  microsecond), so a counter that starts again from nothing still starts above them, as long as
  the server's clock does not step back. A re-sent request gets the token its first run issued.
]]
--@include include/clock.lua
--@include include/holds.lua

if redis.call('exists', KEYS[2]) == 1 then return {0, -3} end
local ttl = redis.call('pttl', KEYS[1])
local count, mark
if ttl ~= -2 then
  count, mark = hold_state(KEYS[1], ARGV[2], ARGV[3])
  -- The mark reads 'a:<token>'.
  if mark then return {1, tonumber(string.sub(mark, 3))} end
  if not count then return {0, ttl} end
end
local t = redis.call('time')
local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
local counter = tonumber(redis.call('get', KEYS[3]) or '0')
-- '%.0f': integers above 2^47 must not pass through Lua's default '%.14g' formatting.
local token = redis.call('incrby', KEYS[3], string.format('%.0f', math.max(1, clock - counter)))
add_hold(KEYS[1], ARGV[2], count, ARGV[1], ARGV[3], 'a:' .. string.format('%.0f', token), ttl)
return {1, token}
