-- outbox-take.lua: EchoMQ protocol v1. Takes up to n due entries of a queue's outbox for one
-- relay (docs/flows.md): each taken entry's due time moves to now + lease (server clock), so no
-- other relay takes it while the lease runs; an entry whose relay crashed becomes due again when
-- its lease lapses and is taken by any live relay (the repair rule). Taking does not remove:
-- only outbox-ack.lua does, after the relay's target script has run. An id left in `outdue`
-- without its text (deleted by hand) is dropped.
--
-- KEYS[1]  emq:{q}:meta    queue meta hash
-- KEYS[2]  emq:{q}:outbox  hash entry id -> entry text
-- KEYS[3]  emq:{q}:outdue  zset entry id -> due at (ms)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  n, the most entries to take (1..1000)
-- ARGV[3]  relay lease in ms (1..86400000)
-- Returns: a flat array of bulk strings { entry id, entry text, ... }, oldest due first.
-- Errors:  EMQ_BAD_ARG, EMQ_VERSION, EMQ_WRONGTYPE. Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 3 or #ARGV ~= 3 then return redis.error_reply('EMQ_BAD_ARG expected 3 keys and 3 arguments') end
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
local n, lease = int(ARGV[2], 1, 1000), int(ARGV[3], 1, 86400000)
if not n then return redis.error_reply('EMQ_BAD_ARG entry count must be an integer in 1..1000') end
if not lease then return redis.error_reply('EMQ_BAD_ARG relay lease must be an integer in 1..86400000 ms') end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE the queue meta key is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.pcall('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, n)
if due.err then return redis.error_reply('EMQ_WRONGTYPE the outdue key is not a zset') end
if #due == 0 then return {} end
local texts = redis.pcall('HMGET', KEYS[2], unpack(due))
if texts.err then return redis.error_reply('EMQ_WRONGTYPE the outbox key is not a hash') end
local out, lapse, gone = {}, {}, {}
for i = 1, #due do
  if texts[i] then
    out[#out + 1] = due[i]
    out[#out + 1] = texts[i]
    lapse[#lapse + 1] = now + lease
    lapse[#lapse + 1] = due[i]
  else
    gone[#gone + 1] = due[i]
  end
end
if #lapse > 0 then redis.call('ZADD', KEYS[3], 'XX', unpack(lapse)) end
if #gone > 0 then redis.call('ZREM', KEYS[3], unpack(gone)) end
return out
