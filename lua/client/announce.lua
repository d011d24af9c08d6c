--[[
  Announce a live client, so that an operator who finds its owner ids in a lock hash can tell
  which host and process they belong to (`rlock inspect` reads it).
  KEYS[1]  rlock_client:{<clientId>}: hash of what the client says about itself
  ARGV[1]  how long the entry lives without another announcement, in ms
  ARGV[2], ARGV[3], ...  field, value, field, value, ...
  Returns  1
]]
redis.call('hset', KEYS[1], unpack(ARGV, 2))
redis.call('pexpire', KEYS[1], ARGV[1])
return 1
