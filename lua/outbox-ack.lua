-- outbox-ack.lua: EchoMQ protocol v1. Removes relayed entries from a queue's outbox (docs/flows.md):
-- a relay acknowledges an entry only after its target script ran, so an entry is removed once its
-- effect exists. Acknowledging an entry that is gone (another relay took it after a lapsed lease
-- and acknowledged first) changes nothing.
--
-- KEYS[1]  emq:{q}:meta    queue meta hash
-- KEYS[2]  emq:{q}:outbox  hash entry id -> entry text
-- KEYS[3]  emq:{q}:outdue  zset entry id -> due at (ms)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  n, the number of entries (1..1000)
-- ARGV[3..2+n] entry ids: "<c|d|x>:<job id>"
-- Returns: the number of entries removed (integer).
-- Errors:  EMQ_BAD_ARG, EMQ_VERSION, EMQ_BAD_ID, EMQ_WRONGTYPE, EMQ_BATCH_TOO_LARGE. Every check
--          comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 3 or #ARGV < 2 then return redis.error_reply('EMQ_BAD_ARG expected 3 keys and at least 2 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, outbox, outdue.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'outbox' or KEYS[3] ~= b .. 'outdue' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, outbox, outdue of one queue, in this order')
end
-- The 14-byte gate: namespace `job`, 11 base62 digits, body at most 2^64-1. Compared byte by
-- byte: Lua's `>` on strings follows the server's collation locale, not byte order.
local function badId(id)
  if #id ~= 14 or not string.match(id, '^job[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
local n = int(ARGV[2], 1, 1000000000)
if not n then return redis.error_reply('EMQ_BAD_ARG entry count must be an integer >= 1') end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 entries per call') end
if #ARGV ~= 2 + n then return redis.error_reply('EMQ_BAD_ARG expected ' .. n .. ' entry ids') end
local ids = {}
for i = 1, n do
  local id = ARGV[2 + i]
  local kind, job = string.match(id, '^([cdx]):(.*)$')
  if not kind then return redis.error_reply('EMQ_BAD_ARG entry ' .. i .. ' is not "<c|d|x>:<job id>"') end
  if badId(job) then return redis.error_reply('EMQ_BAD_ID entry ' .. i .. ' names a malformed job id') end
  ids[i] = id
end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE the queue meta key is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
local kind = redis.call('TYPE', KEYS[3])['ok']
if kind ~= 'none' and kind ~= 'zset' then return redis.error_reply('EMQ_WRONGTYPE the outdue key is a ' .. kind .. ', not a zset') end
-- The first write is the type check of `outbox`: a write refused with WRONGTYPE changes nothing.
local r = redis.pcall('HDEL', KEYS[2], unpack(ids))
if type(r) == 'table' and r.err then return redis.error_reply('EMQ_WRONGTYPE the outbox key is not a hash') end
redis.call('ZREM', KEYS[3], unpack(ids))
return r
