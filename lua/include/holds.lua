--[[
  Helpers for the hold counts in a lock hash, shared by the exclusive lock kinds, pasted in where a
  script says "--@include include/holds.lua" (after include/clock.lua).

  Every acquire request has a latch: a key name unique to it (rlock_hold_latch:{name}:<request>),
  and a mark field (rlock_mark:<request>, where <request> is <client id>:<n>). ioredis re-sends a
  command whose reply a reconnect lost, and rlock sends a request again when it cannot tell whether
  it ran, so a script may run twice for one request; the latch makes the second run change nothing.
  - The hold a request takes is marked in the lock hash itself: its mark field, valued 'a' (or
    'a:<token>' for a fenced lock), beside the owner's count. The mark lives exactly as long as the
    lock, so a released lock leaves nothing behind, and a re-sent copy of the acquire finds it. The
    field leaves out the lock's name, so that it stays short: a hash whose fields all fit in 64
    bytes (hash-max-listpack-value) keeps Redis' compact encoding, which is cheaper to write, read
    and delete than the hash table a longer field turns it into.
  - The latch key is written only off the common path: 'w' when the request was withdrawn (a copy
    that runs later takes nothing), 'r0' when its hold was released while the owner kept others
    (the lock lives on, and a re-sent copy of that release must not release a second hold).
  One case is the client's to judge: a re-sent copy of the release that deleted the lock finds
  nothing, as a release after the lease ran out does.
  A release of `any` hold of the owner (one Redis did not mark, see release_hold) has no mark to
  find: its latch remembers its answer ('r0' or 'r1') instead, and its copies act only inside the
  request's window (server ms), failing LATE after it, while the latch outlives the window (see
  include/requests.lua, whose rule this is). A latch that says 'w' was settled as a request that
  never takes effect (see request/settle.lua): its copies take nothing.
]]

-- The owner's hold count (nil: it holds nothing) and the mark of a request, by its mark field
-- `field` (nil: none).
local function hold_state(lock, owner, field)
  local state = redis.call('hmget', lock, owner, field)
  -- A missing field reads false (in ioredis-mock's Lua, some other value that is not a string).
  local mark = state[2]
  if type(mark) ~= 'string' then mark = nil end
  return tonumber(state[1]), mark
end

-- Adds one hold of `owner`, marked `mark` in the request's mark field `field`. `count` is the
-- owner's hold count (nil: none) and `ttl` the lock's (-2: no lock). The ttl becomes at least
-- `lease`: a short inner lease never cuts off an outer hold.
-- `lease` is the script's argument as sent, text: a Lua number handed to redis.call is turned into
-- text with sprintf, which costs more than a call that reads a key (see docs/hot-path.md).
local function add_hold(lock, owner, count, lease, field, mark, ttl)
  redis.call('hset', lock, owner, count and count + 1 or '1', field, mark)
  if ttl < tonumber(lease) then
    redis.call('pexpire', lock, lease)
  end
end

-- Removes one hold of `owner`, whose count is `count`, taken by the request of `latch` and
-- `field`: 0 when holds remain (the ttl is left as it is; the latch remembers the release for at
-- least `latch_ms`, and as long as the lock lives), 1 when that was the last hold and the lock is
-- deleted.
local function remove_hold(lock, owner, count, latch, field, latch_ms)
  if count > 1 then
    redis.call('hset', lock, owner, count - 1)
    redis.call('hdel', lock, field)
    redis.call('set', latch, 'r0', 'px', math.max(redis.call('pttl', lock), latch_ms))
    return 0
  end
  redis.call('del', lock)
  return 1
end

-- A release whose request marks no hold, or that releases any hold of the owner: `settled` when
-- an earlier run answered already (the latch says 'r0' or 'r1'), when it was settled as one that
-- never takes effect ('w', nil), or when it is a 'marked' release (`which`), whose hold is gone
-- (nil). Otherwise `which` is the window (server ms) of a release of any one hold of the owner:
-- after it the copy fails LATE, taking nothing; inside it, it goes on (`settled` false).
local function settled_release(latch, which)
  local earlier = redis.call('get', latch)
  if earlier == 'r0' then return true, 0 end
  if earlier == 'r1' then return true, 1 end
  if which == 'marked' or earlier == 'w' then return true, nil end
  if server_ms() > tonumber(which) then
    error({ err = 'LATE this copy of the release reached Redis after its window closed; it took no effect' })
  end
  return false
end

-- Remembers the answer of a release of any one hold of the owner, until `latch_ms` past the end
-- of its window `which` (it outlives every copy that may act).
local function remember_release(latch, freed, which, latch_ms)
  redis.call('set', latch, 'r' .. freed, 'pxat', tonumber(which) + latch_ms)
end

-- Releases the hold the request of `latch` and `field` took: nil when it holds nothing (any more),
-- 0 when the owner still holds others, 1 when the lock is deleted; and, second, true when that
-- answer is an earlier run's, remembered by the latch: this copy changed nothing, and its script
-- must not act on a release that already happened (the lock may be someone else's by now). `which` is 'marked', or the
-- window of a release of any one hold of the owner (see settled_release): a hold without a mark
-- (taken by a hand-off not yet confirmed, or through another client for an explicit owner id). A
-- release of any hold goes by its latch and window even when the hold was marked since (a
-- hand-off confirmed meanwhile), and remembers every answer: a request settled as one that never
-- takes effect ('w') takes nothing, and one that took effect says so to its settlement.
-- settled_release, remember_release and server_ms are spelled out here, not called: every helper
-- a script keeps is one more closure made on every run (see scripts/lua-module.ts), and every
-- unlock() runs this one.
local function release_hold(lock, owner, latch, field, latch_ms, which)
  local count, mark = hold_state(lock, owner, field)
  if mark and which == 'marked' then return remove_hold(lock, owner, count, latch, field, latch_ms) end
  local earlier = redis.call('get', latch)
  if earlier == 'r0' then return 0, true end
  if earlier == 'r1' then return 1, true end
  if which == 'marked' or earlier == 'w' or not count then return nil end
  local now = redis.call('time')
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > tonumber(which) then
    error({ err = 'LATE this copy of the release reached Redis after its window closed; it took no effect' })
  end
  local freed = remove_hold(lock, owner, count, latch, field, latch_ms)
  redis.call('set', latch, 'r' .. freed, 'pxat', tonumber(which) + latch_ms)
  return freed
end

-- Withdraws the request of `latch` and `field`: a copy that runs later takes nothing, and the hold
-- it took, if any, is released. Returns 1 when it had taken a hold, with `freed` 1 when that
-- deleted the lock.
local function withdraw_request(lock, owner, latch, field, latch_ms)
  local count, mark = hold_state(lock, owner, field)
  redis.call('set', latch, 'w', 'px', latch_ms, 'nx')
  if not mark or not count then return 0, 0 end
  return 1, remove_hold(lock, owner, count, latch, field, latch_ms)
end
