-- dead-letter.lua: EchoMQ protocol v1. Moves one pending entry of a consumer group to the topic's
-- dead-letter log and acknowledges it, atomically: either both happen or neither. Used when the
-- entry's delivery count reached the group's limit. Only an entry still pending in the group and
-- idle for at least `min idle` ms is moved (a live member that keeps its entry fresh keeps it, and
-- two members racing on one entry write one dead letter). An entry that is pending but no longer
-- in the log (trimmed or deleted) is acknowledged and reported lost; nothing is appended.
--
-- KEYS[1]  emq:{t}:bus:meta  topic meta hash (version fence)
-- KEYS[2]  emq:{t}:bus:log   the event log (stream) the group lives on
-- KEYS[3]  emq:{t}:bus:dead  the dead-letter log (stream)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  group name (key grammar)
-- ARGV[3]  consumer name of the caller (key grammar)
-- ARGV[4]  stream id of the entry, `<ms>-<seq>`
-- ARGV[5]  branded event id of the entry (`evt` + 11 base62 digits), recorded as `id`
-- ARGV[6]  error text (at most 65536 bytes; "" is recorded as "delivery limit exceeded")
-- ARGV[7]  min idle ms (0..86400000): refuse if the entry was touched more recently
-- ARGV[8]  dead-letter cap (1..1000000), applied with XADD MAXLEN ~
-- Returns: {status, deliveries}: status 1 = dead-lettered and acked, 2 = entry gone from the log
--          (acked, nothing appended: the caller reports it lost), 0 = not pending in the group
--          or not idle long enough (nothing written). deliveries = the server's delivery count.
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, keys of different topics), EMQ_VERSION,
--          EMQ_BAD_NAME, EMQ_BAD_ID, EMQ_WRONGTYPE (meta not a hash, log or dead not a stream),
--          EMQ_NOT_FOUND (NOGROUP: the log or the group does not exist). Every check precedes the
--          first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 3 or #ARGV ~= 8 then return redis.error_reply('EMQ_BAD_ARG expected 3 keys and 8 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local stored = redis.pcall('HGET', KEYS[1], 'v')
if type(stored) == 'table' and stored.err then return redis.error_reply('EMQ_WRONGTYPE the topic meta key is not a hash') end
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION topic data is protocol ' .. stored .. ', script speaks ' .. V)
end
local base = string.match(KEYS[1], '^(emq:{[A-Za-z0-9_.-]+}:bus:)meta$')
if not base or KEYS[2] ~= base .. 'log' or KEYS[3] ~= base .. 'dead' then
  return redis.error_reply('EMQ_BAD_ARG keys must be the meta, log and dead keys of one topic')
end
local function badName(s)
  return #s < 1 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
end
local group, consumer, sid, evt, err = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
if badName(group) then return redis.error_reply('EMQ_BAD_NAME bad group name') end
if badName(consumer) then return redis.error_reply('EMQ_BAD_NAME bad consumer name') end
if #sid > 41 or not string.match(sid, '^%d+%-%d+$') then return redis.error_reply('EMQ_BAD_ARG bad stream id') end
-- The 14-byte gate, byte by byte (Lua's `>` on strings follows the locale, not byte order).
local function badId(id)
  if #id ~= 14 or not string.match(id, '^evt[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
if badId(evt) then return redis.error_reply('EMQ_BAD_ID bad event id') end
if #err > 65536 then return redis.error_reply('EMQ_BAD_ARG error text is over 65536 bytes') end
local minIdle, cap = int(ARGV[7], 0, 86400000), int(ARGV[8], 1, 1000000)
if not minIdle then return redis.error_reply('EMQ_BAD_ARG min idle must be an integer in 0..86400000') end
if not cap then return redis.error_reply('EMQ_BAD_ARG dead-letter cap must be an integer in 1..1000000') end
local deadKind = redis.call('TYPE', KEYS[3])['ok']
if deadKind ~= 'stream' and deadKind ~= 'none' then
  return redis.error_reply('EMQ_WRONGTYPE the dead-letter key holds a ' .. deadKind .. ', not a stream')
end

-- Reads only from here on; a missing log or group (NOGROUP) is refused before any write.
local pel = redis.pcall('XPENDING', KEYS[2], group, sid, sid, 1)
if type(pel) == 'table' and pel.err then
  if string.find(pel.err, 'WRONGTYPE', 1, true) then return redis.error_reply('EMQ_WRONGTYPE the log key is not a stream') end
  if string.find(pel.err, 'NOGROUP', 1, true) then return redis.error_reply('EMQ_NOT_FOUND NOGROUP no log or no group ' .. group .. ' on it') end
  return redis.error_reply('EMQ_BAD_ARG ' .. pel.err)
end
if #pel == 0 then return {0, 0} end
local deliveries = tonumber(pel[1][4])
if tonumber(pel[1][3]) < minIdle then return {0, deliveries} end
local entry = redis.call('XRANGE', KEYS[2], sid, sid)
if #entry == 0 then
  redis.call('XACK', KEYS[2], group, sid)
  return {2, deliveries}
end
local fields, payload = entry[1][2], ''
for i = 1, #fields, 2 do
  if fields[i] == 'p' then payload = fields[i + 1] end
end
if err == '' then err = 'delivery limit exceeded' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', cap, '*', 'id', evt, 'group', group, 'consumer', consumer,
  'deliveries', deliveries, 'error', err, 'p', payload, 'at', now)
redis.call('XACK', KEYS[2], group, sid)
return {1, deliveries}
