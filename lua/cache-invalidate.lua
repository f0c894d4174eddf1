-- cache-invalidate.lua: EchoMQ protocol v1. Invalidates one L2 cache entry: replaces it with a
-- tombstone {v = version, x = 1} kept for the tombstone window, so a loader that began before
-- the invalidation (its version is older) cannot write its old value back (cache-set.lua refuses
-- it). An entry already holding a NEWER version than the invalidation is kept: it was written by
-- a load or set that began after the invalidation was minted.
--
-- KEYS[1]  emq:{c:<ns>:<key>}:entry   the entry hash (see cache-set.lua)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  the invalidation's version: a 14-byte branded id `ver<11 base62>`, minted now
-- ARGV[3]  tombstone window in ms (1..86400000)
-- Returns: 1 tombstoned, 0 kept (the entry holds the same or a newer version).
-- Errors:  EMQ_BAD_ARG (a wrong key or argument count, a tombstone window that is not a decimal
--          integer in range), EMQ_VERSION (caller's version, or a stored `v` that is not a
--          version id), EMQ_BAD_ID, EMQ_WRONGTYPE (the entry is not a hash). Nothing is written
--          unless every input is valid.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local V = '1'
if #KEYS ~= 1 or #ARGV ~= 3 then return redis.error_reply('EMQ_BAD_ARG expected 1 key and 3 arguments') end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- The 14-byte gate: namespace `ver`, 11 base62 digits, body at most 2^64-1. Compared byte by
-- byte: Lua's `<` on strings follows the server's collation locale, not byte order.
local function badId(id)
  if #id ~= 14 or not string.match(id, '^ver[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
-- True when id a sorts strictly before id b (both 14 bytes), byte by byte.
local function older(a, b)
  for i = 1, 14 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
local ver = ARGV[2]
if badId(ver) then return redis.error_reply('EMQ_BAD_ID the version is not a 14-byte ver id') end
local tombMs = int(ARGV[3], 1, 86400000)
if not tombMs then return redis.error_reply('EMQ_BAD_ARG tombstone ms must be an integer in 1..86400000') end
local stored = redis.pcall('HGET', KEYS[1], 'v')
if type(stored) == 'table' and stored.err then
  if string.find(stored.err, 'WRONGTYPE', 1, true) then return redis.error_reply('EMQ_WRONGTYPE the cache entry is not a hash') end
  return redis.error_reply(stored.err)
end
if stored and badId(stored) then
  return redis.error_reply('EMQ_VERSION the entry is not protocol ' .. V .. ' cache data')
end

if stored and not older(stored, ver) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ver, 'x', '1')
redis.call('PEXPIRE', KEYS[1], tombMs)
return 1
