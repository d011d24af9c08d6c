--[[
  Set the lease of an owner's read holds to a given time from now (a group lock's last step: its
  members were taken with a longer lease). Other readers keep theirs: a read-mode lock then lives
  as long as its longest read hold; a writer's lease is left as it is.
  KEYS[1]  lock hash (see include/rwlock.lua)
  KEYS[2]  the owner's read-hold timeout prefix: <base>:<owner id>:rwlock_timeout
  KEYS[3]  the base of every owner's timeout keys
  ARGV[1]  lease in ms
  ARGV[2]  owner id (the read field)
  Returns  1 when set, 0 when the owner holds no read hold
]]
--@include include/clock.lua
--@include include/rwlock.lua

local count = redis.pcall('hget', KEYS[1], ARGV[2])
count = type(count) == 'string' and tonumber(count) or nil
if not count then return 0 end
for n = count, 1, -1 do
  redis.call('pexpire', KEYS[2] .. ':' .. n, ARGV[1])
end
if redis.call('hget', KEYS[1], 'mode') == 'read' then
  redis.call('pexpire', KEYS[1], math.max(longest_read_hold(KEYS[1], KEYS[3]), tonumber(ARGV[1])))
end
return 1
