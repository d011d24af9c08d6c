--[[
  Where one client hears the messages meant for it alone, pasted in where a script says
  "--@include include/addresses.lua": a fair waiter's hand-offs (include/fair-queue.lua), a getLock
  waiter's wake-ups (include/lock-waiters.lua). An address is its client's channel with the way it
  subscribes it: "p:<channel>" (PUBLISH), "s:<channel>" (SPUBLISH: a shard channel, in the lock's
  slot), or "b:<channel>" (PUBLISH on a cluster, which carries the message to every node but counts
  only the receivers on this one). Each address says its own way, so clients that use different
  ones on one cluster are all told, and a release never publishes a shard channel of another slot
  (which Redis would refuse half-way through the script).
]]

-- Sends `message` to the client at `address`. Returns false when the client is surely gone (nobody
-- received it where the count tells), true otherwise.
local function send_to(address, message)
  if type(address) ~= 'string' then return false end
  local way = string.sub(address, 1, 2)
  local received = redis.call(way == 's:' and 'spublish' or 'publish', string.sub(address, 3), message)
  return received > 0 or way == 'b:'
end
