/**
 * The store-side check of docs/reliability.md, as a Redis script: write only with a token above
 * every token seen. KEYS[1] the record; ARGV[1] the writer's token, ARGV[2] the value.
 * Returns 1 when written, 0 when refused.
 */
export const FENCED_WRITE = `
local last = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) <= last then return 0 end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1`;
