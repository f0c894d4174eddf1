-- cache-get.lua: EchoMQ protocol v1. Reads one cache entry atomically (read-only): its fields and
-- its remaining life on the server clock, in one command.
--
-- KEYS[1]  emq:{c:<ns>:<key>}:entry   the entry hash
-- KEYS[2]  emq:{c:<ns>:<key>}:lease   the entry's fill lease
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  "1" to also report whether the fill lease is held, else "0"
-- Returns: { v, d, n, x, g, pttl, leased } (absent fields as false; pttl as PTTL reports it;
--          leased 1/0)
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
if ARGV[2] ~= '0' and ARGV[2] ~= '1' then return redis.error_reply('EMQ_BAD_ARG lease flag must be 0 or 1') end
local f = redis.call('HMGET', KEYS[1], 'v', 'd', 'n', 'x', 'g')
local leased = 0
if ARGV[2] == '1' then leased = redis.call('EXISTS', KEYS[2]) end
return { f[1], f[2], f[3], f[4], f[5], redis.call('PTTL', KEYS[1]), leased }
