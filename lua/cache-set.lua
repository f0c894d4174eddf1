-- cache-set.lua: EchoMQ protocol v1. Writes one L2 cache entry, fenced by its version: the write
-- lands only when the entry holds no version, or an OLDER one (live value or tombstone). A
-- loader that began before an invalidation carries an older version than the tombstone, so it
-- can never write its old value back. Newer mint wins; an equal version is not written twice.
--
-- KEYS[1]  emq:{c:<ns>:<key>}:entry   the entry hash: v version id, d JSON value, t tags,
--                                     g grace ms, n = 1 a cached miss, x = 1 a tombstone
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  the writer's version: a 14-byte branded id `ver<11 base62>`, minted when its load began
-- ARGV[3]  the value as JSON text ("" = a cached miss: the entry gets n = 1 and no d)
-- ARGV[4]  fresh time in ms (1..315360000000), jitter already applied by the caller
-- ARGV[5]  largest value in bytes (1..536870912)
-- ARGV[6]  tags, space-separated ("" = none); each 1..512 printable ASCII without braces
-- ARGV[7]  grace in ms (0..315360000000): the entry lives ttl + grace, stale during the grace
-- Returns: {1} written, or {0, storedVersion} when the entry holds the same or a newer version.
-- Errors:  EMQ_VERSION (caller's version, or a stored `v` that is not a version id),
--          EMQ_BAD_ARG (missing or malformed arguments: every number is a decimal integer in
--          range), EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE, EMQ_WRONGTYPE (the entry is not a hash).
--          Every input is checked, and the entry read, before the first write: a refusal
--          writes nothing. The tag index is not written here (another slot): see cache-tag.lua.
local V = '1'
if #KEYS ~= 1 or #ARGV ~= 7 then return redis.error_reply('EMQ_BAD_ARG expected 1 key and 7 arguments') end
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
local LIMIT = 315360000000
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local ver, value, tags = ARGV[2], ARGV[3], ARGV[6]
if badId(ver) then return redis.error_reply('EMQ_BAD_ID the version is not a 14-byte ver id') end
local ttl, maxBytes, grace = int(ARGV[4], 1, LIMIT), int(ARGV[5], 1, 536870912), int(ARGV[7], 0, LIMIT)
if not ttl then return redis.error_reply('EMQ_BAD_ARG ttl must be an integer in 1..' .. LIMIT) end
if not maxBytes then return redis.error_reply('EMQ_BAD_ARG max bytes must be an integer in 1..536870912') end
if not grace then return redis.error_reply('EMQ_BAD_ARG grace must be an integer in 0..' .. LIMIT) end
if #value > maxBytes then
  return redis.error_reply('EMQ_PAYLOAD_TOO_LARGE value is ' .. #value .. ' bytes, the limit is ' .. maxBytes)
end
if tags ~= '' then
  for tag in string.gmatch(tags, '[^ ]+') do
    if #tag > 512 then return redis.error_reply('EMQ_BAD_ARG a tag is longer than 512 bytes') end
  end
  if string.find(tags, '[^\33-\122\124\126 ]') or string.find(tags, '^ ') or string.find(tags, ' $') or string.find(tags, '  ') then
    return redis.error_reply('EMQ_BAD_ARG tags must be printable ASCII without braces, separated by single spaces')
  end
end
local stored = redis.pcall('HGET', KEYS[1], 'v')
if type(stored) == 'table' and stored.err then
  if string.find(stored.err, 'WRONGTYPE', 1, true) then return redis.error_reply('EMQ_WRONGTYPE the cache entry is not a hash') end
  return redis.error_reply(stored.err)
end
if stored and badId(stored) then
  return redis.error_reply('EMQ_VERSION the entry is not protocol ' .. V .. ' cache data')
end

if stored and not older(stored, ver) then return { 0, stored } end
redis.call('DEL', KEYS[1])
local fields = { 'v', ver }
if value == '' then
  fields[#fields + 1] = 'n'
  fields[#fields + 1] = '1'
else
  fields[#fields + 1] = 'd'
  fields[#fields + 1] = value
end
if tags ~= '' then
  fields[#fields + 1] = 't'
  fields[#fields + 1] = tags
end
if grace > 0 then
  fields[#fields + 1] = 'g'
  fields[#fields + 1] = grace
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIRE', KEYS[1], ttl + grace)
return { 1 }
