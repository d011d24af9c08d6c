--[[
  Redis' own clock, pasted in where a script says "--@include include/clock.lua", before the
  includes that read it: deadlines and windows never depend on a client's clock, nor on two
  clients agreeing.
]]

-- The server's time in ms since the epoch.
local function server_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
