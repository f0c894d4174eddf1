-- cache-get.lua: EchoMQ protocol v1. Reads one cache entry atomically (read-only): its fields and
-- its remaining life on the server clock, in one command.
--
-- KEYS[1]  emq:{c:<ns>:<key>}:entry   the entry hash
-- KEYS[2]  emq:{c:<ns>:<key>}:lease   the entry's fill lease
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  "1" to also report whether the fill lease is held, else "0"
-- Returns: { v, d, n, x, g, pttl, leased } (absent fields as false; pttl as PTTL reports it;
--          leased 1/0)
-- Errors:  EMQ_BAD_ARG (a wrong key or argument count, a bad lease flag), EMQ_VERSION,
--          EMQ_WRONGTYPE (the entry is not a hash). Writes nothing.
local V = '1'
if #KEYS ~= 2 or #ARGV ~= 2 then return redis.error_reply('EMQ_BAD_ARG expected 2 keys and 2 arguments') end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
if ARGV[2] ~= '0' and ARGV[2] ~= '1' then return redis.error_reply('EMQ_BAD_ARG lease flag must be 0 or 1') end
local f = redis.pcall('HMGET', KEYS[1], 'v', 'd', 'n', 'x', 'g')
if f.err then
  if string.find(f.err, 'WRONGTYPE', 1, true) then return redis.error_reply('EMQ_WRONGTYPE the cache entry is not a hash') end
  return redis.error_reply(f.err)
end
local leased = 0
if ARGV[2] == '1' then leased = redis.call('EXISTS', KEYS[2]) end
return { f[1], f[2], f[3], f[4], f[5], redis.call('PTTL', KEYS[1]), leased }
