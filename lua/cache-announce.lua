-- cache-announce.lua: EchoMQ protocol v1. Announces that keys of one cache namespace were
-- invalidated at a version: appends ONE entry to the namespace's bounded invalidation log (all
-- the keys of the call, in order) and signals it on the namespace's sharded channel as a wake-up
-- hint. Nodes follow the log from their own position (docs/cache.md, "Coherence"); the signal
-- only makes them read sooner, so a lost signal costs at most one poll period.
-- Entry: `v <ver> k <key1> [k <key2> …]` (the field `k` repeats, in the caller's order).
-- Signal: `{"id":"<entry id>"}`, plus `"v":"<ver>","k":["<key1>",…]` when the call has at most
-- 16 keys, so a follower can drop those keys from its L1 on arrival, before its log read (which
-- still follows and stays the source of truth).
--
-- KEYS[1]  emq:{ns}:cache:log      stream: the namespace's invalidation log
-- KEYS[2]  emq:{ns}:cache:signal   sharded channel of the same namespace (same slot as the log)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  log length bound (1..1000000), applied as `MAXLEN ~`
-- ARGV[3]  ver: the invalidation's version, a 14-byte branded id of namespace `ver`
-- ARGV[4 .. 3+n] the n invalidated keys (1..1000), each 1..512 bytes of printable ASCII
--          without space, `{` or `}`
-- Returns: the stream id `<ms>-<seq>` of the entry.
-- Errors:  EMQ_BAD_ARG (a wrong key count, fewer than 4 arguments, keys, a length bound that is
--          not a decimal integer in range), EMQ_VERSION, EMQ_BAD_ID (ver), EMQ_BAD_NAME (a key),
--          EMQ_BATCH_TOO_LARGE (more than 1000 keys), EMQ_WRONGTYPE (the log is not a stream).
--          Nothing is written or signalled unless every input is valid.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local V = '1'
if #KEYS ~= 2 or #ARGV < 4 then return redis.error_reply('EMQ_BAD_ARG expected 2 keys (log, signal) and at least 4 arguments') end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local ns = string.match(KEYS[1], '^emq:{([A-Za-z0-9_.%-]+)}:cache:log$')
if not ns or #ns > 100 then return redis.error_reply('EMQ_BAD_ARG key 1 is not a cache namespace log') end
if KEYS[2] ~= 'emq:{' .. ns .. '}:cache:signal' then
  return redis.error_reply('EMQ_BAD_ARG key 2 is not the signal channel of namespace ' .. ns)
end
local maxLen = int(ARGV[2], 1, 1000000)
if not maxLen then return redis.error_reply('EMQ_BAD_ARG log length must be an integer in 1..1000000') end
-- The 14-byte gate for namespace `ver`: 11 base62 digits, body at most 2^64-1, compared byte by
-- byte (Lua's `>` on strings follows the server's collation locale, not byte order).
local function badId(id)
  if not id or #id ~= 14 or not string.match(id, '^ver[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
local ver = ARGV[3]
if badId(ver) then return redis.error_reply('EMQ_BAD_ID ver is not a 14-byte branded id of namespace "ver"') end
local n = #ARGV - 3
if n < 1 then return redis.error_reply('EMQ_BAD_ARG no keys to announce') end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 keys per call') end
-- Mirrors assertCacheKey: bytes 0x21..0x7a, `|` and `~` (printable ASCII without space and braces).
local fields = { 'v', ver }
local signalled = {}
for i = 1, n do
  local key = ARGV[3 + i]
  if #key < 1 or #key > 512 or not string.match(key, '^[!-z|~]+$') then
    return redis.error_reply('EMQ_BAD_NAME key ' .. i .. ' must be 1..512 printable ASCII characters without spaces or braces')
  end
  fields[#fields + 1] = 'k'
  fields[#fields + 1] = key
  if n <= 16 then signalled[i] = key end
end

-- The log's first touch would be a write: check its type first.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'stream' and kind ~= 'none' then
  return redis.error_reply('EMQ_WRONGTYPE the invalidation log holds a ' .. kind .. ', not a stream')
end

local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', unpack(fields))
local hint = { id = id }
if n <= 16 then
  hint.v = ver
  hint.k = signalled
end
redis.call('SPUBLISH', KEYS[2], cjson.encode(hint))
return id
