-- cache-get.lua: EchoMQ protocol v1. Reads 1..N cache entries atomically (read-only): each one's
-- fields and its remaining life on the server clock, in one command.
--
-- KEYS[2i-1]  emq:{c:<ns>:<key>}:entry   entry i's hash
-- KEYS[2i]    emq:{c:<ns>:<key>}:lease   entry i's fill lease
-- ARGV[1]     protocol version ("1")
-- ARGV[2]     one lease flag per entry, in order ("1" = also report whether entry i's fill lease
--             is held, "0" = not): a string of N characters, each 0 or 1
-- Returns: N groups of 7, flat: { v, d, n, x, g, pttl, leased, v, d, … } (absent fields as false;
--          pttl as PTTL reports it; leased 1/0). One entry (N = 1) is exactly one group.
-- Errors:  EMQ_BAD_ARG (an odd or zero key count, a wrong argument count, lease flags that are not
--          N characters of 0/1), EMQ_VERSION, EMQ_WRONGTYPE (an entry is not a hash: the whole
--          call fails; a caller that batched reads re-reads them one by one). Writes nothing.
-- A call of N > 1 entries touches N hash tags: it is legal only where every key is on one node
-- (a standalone Valkey); a cluster client reads one entry per call.
local V = '1'
local n = #KEYS
if n < 2 or n % 2 ~= 0 or #ARGV ~= 2 then
  return redis.error_reply('EMQ_BAD_ARG expected 2 keys per entry and 2 arguments')
end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local flags = ARGV[2]
if #flags ~= n / 2 or string.find(flags, '[^01]') then
  return redis.error_reply('EMQ_BAD_ARG lease flags must be one 0 or 1 per entry')
end
local out, o = {}, 0
for i = 1, n, 2 do
  local e = KEYS[i]
  local f = redis.pcall('HMGET', e, 'v', 'd', 'n', 'x', 'g')
  if f.err then
    if string.find(f.err, 'WRONGTYPE', 1, true) then return redis.error_reply('EMQ_WRONGTYPE the cache entry is not a hash') end
    return redis.error_reply(f.err)
  end
  local leased = 0
  if string.byte(flags, (i + 1) / 2) == 49 then leased = redis.call('EXISTS', KEYS[i + 1]) end
  out[o + 1] = f[1]
  out[o + 2] = f[2]
  out[o + 3] = f[3]
  out[o + 4] = f[4]
  out[o + 5] = f[5]
  out[o + 6] = redis.call('PTTL', e)
  out[o + 7] = leased
  o = o + 7
end
return out
