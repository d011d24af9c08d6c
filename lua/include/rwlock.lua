--[[
  Helpers of the read-write lock (Redisson's RReadWriteLock layout), pasted in where a script says
  "--@include include/rwlock.lua" (after include/holds.lua, whose hold_state and latches it uses).

  The hash at the lock's name holds:
    mode                      'read' or 'write'
    <owner id>                that owner's read holds (a count)
    <owner id>:write          the writer's write holds (a count)
    rlock_mark:...            rlock's marks of its holds (see include/holds.lua); never a count
  Each read hold n of an owner has a timeout key <base>:<owner id>:rwlock_timeout:<n> whose ttl is
  that hold's lease: a read-mode lock lives as long as its longest remaining read hold.
  A name that prefers writers has a flag key (rlock_rwlock_writer_preference:{name}), which lives
  exactly while the name is in use: see keep_preference.
]]

-- The writer preference of a name lives while the name is in use, and no longer: at least as long
-- as its lock hash and, where the script has them, its waiting writers' places; when neither is
-- left, the flag goes. Every rlock script that lengthens the hash's life, or may end it, calls this
-- (a hash lengthened by a Redisson client may outlive the flag, which Redisson ignores anyway).
-- A flag from an earlier version, without a ttl, gets one here; so does a flag beside a hash
-- without expiry (not rlock's), `fallback` ms when given.
local function keep_preference(preference, lock, writers, fallback)
  local kept = redis.call('pttl', preference)
  if kept == -2 then return end
  local used = redis.call('pttl', lock)
  if writers then used = math.max(used, redis.call('pttl', writers)) end
  if used == -1 then used = tonumber(fallback) or -1 end
  if used == -2 then
    redis.call('del', preference)
  elseif used > 0 and (kept == -1 or kept < used) then
    redis.call('pexpire', preference, used)
  end
end

-- How long the waiting writers keep new readers out (0: no writer waits); lapsed places go first.
local function writers_wait(writers)
  local now = server_ms()
  redis.call('zremrangebyscore', writers, '-inf', now)
  local last = redis.call('zrange', writers, -1, -1, 'withscores')
  if #last == 0 then return 0 end
  return math.max(1, tonumber(last[2]) - now)
end

-- The longest remaining ttl of any read hold's timeout key (-3 when there is none), counting the
-- holds every owner field says it has.
local function longest_read_hold(lock, base)
  local longest = -3
  local fields = redis.call('hgetall', lock)
  for i = 1, #fields, 2 do
    local count = tonumber(fields[i + 1])
    if fields[i] ~= 'mode' and count then
      for n = count, 1, -1 do
        longest = math.max(longest, redis.call('pttl', base .. ':' .. fields[i] .. ':rwlock_timeout:' .. n))
      end
    end
  end
  return longest
end

-- Whether any owner still holds the lock (a field with a count besides mode).
local function has_holders(lock)
  local fields = redis.call('hgetall', lock)
  for i = 1, #fields, 2 do
    if fields[i] ~= 'mode' and tonumber(fields[i + 1]) then return true end
  end
  return false
end

-- Removes the newest read hold of `owner` (`count` read holds), whose request was `latch` (its
-- mark field `mark_field`).
-- Returns owner_freed (1: that was the owner's last read hold) and lock_freed (1: the lock is gone).
-- A read-mode lock then lives as long as its longest remaining read hold, or is deleted when none
-- is left (holds of owners whose timeout keys are all gone are dead: Redisson's rule).
local function remove_read_hold(lock, owner, count, latch, mark_field, latch_ms, timeouts, base)
  redis.call('del', timeouts .. ':' .. count)
  redis.call('hdel', lock, mark_field)
  local owner_freed = 1
  if count > 1 then
    owner_freed = 0
    redis.call('hset', lock, owner, count - 1)
    redis.call('set', latch, 'r0', 'px', math.max(redis.call('pttl', lock), latch_ms))
  else
    redis.call('hdel', lock, owner)
  end
  -- The writer (who also reads) keeps the lease it has.
  if redis.call('hget', lock, 'mode') == 'write' then return owner_freed, 0 end
  local longest = longest_read_hold(lock, base)
  if longest > 0 then
    redis.call('pexpire', lock, longest)
    return owner_freed, 0
  end
  redis.call('del', lock)
  return owner_freed, 1
end

-- Removes one write hold of `field` (`count` write holds), whose request was `latch` (its mark
-- field `mark_field`). Returns
-- owner_freed (1: the write lock is released) and lock_freed (1: the lock is gone). A writer that
-- also reads keeps its read holds: the lock goes to read mode (a downgrade), and lives at least as
-- long as its longest read hold.
local function remove_write_hold(lock, field, count, latch, mark_field, latch_ms, base)
  if count > 1 then
    redis.call('hset', lock, field, count - 1)
    redis.call('hdel', lock, mark_field)
    redis.call('set', latch, 'r0', 'px', math.max(redis.call('pttl', lock), latch_ms))
    return 0, 0
  end
  redis.call('hdel', lock, field, mark_field)
  if has_holders(lock) then
    redis.call('hset', lock, 'mode', 'read')
    local longest = longest_read_hold(lock, base)
    if longest > redis.call('pttl', lock) then redis.call('pexpire', lock, longest) end
    return 1, 0
  end
  redis.call('del', lock)
  return 1, 1
end
