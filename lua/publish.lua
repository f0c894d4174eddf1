-- publish.lua: EchoMQ protocol v1. Appends one or many events to a topic's retained log, in
-- one atomic call: every entry is `XADD <log> * p <payload>`, its id minted by the server clock
-- (all entries of one call share the call's millisecond, in order). Payloads are opaque JSON
-- text. Retention is not applied here (trim.lua does it). An optional block of n traceparents
-- after the payloads gives an entry a `tp` field (`XADD <log> * p <payload> tp <traceparent>`),
-- the producer's W3C trace context (docs/telemetry.md); an empty one adds no field.
--
-- KEYS[1]  emq:{t}:bus:meta  topic meta hash (protocol version `v`, retention policy)
-- KEYS[2]  emq:{t}:bus:log   stream: the event log
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  largest payload in bytes (decimal integer, 1..536870912)
-- ARGV[3]  n, the number of events (decimal integer, 1..1000)
-- ARGV[4 .. 3+n]  the payloads (JSON text, non-empty), in publish order
-- ARGV[4+n .. 3+2n]  optional: one traceparent per event (text of at most 256 bytes; empty: none)
-- Returns: an array of n stream ids `<ms>-<seq>`, in publish order.
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, keys that are not the topic's), EMQ_VERSION,
--          EMQ_WRONGTYPE (meta is not a hash or the log is not a stream), EMQ_PAYLOAD_TOO_LARGE,
--          EMQ_BATCH_TOO_LARGE. Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 2 or #ARGV < 4 then return redis.error_reply('EMQ_BAD_ARG expected 2 keys and at least 4 arguments') end
local base = string.match(KEYS[1], '^(emq:{[A-Za-z0-9_.-]+}:bus:)meta$')
if not base or KEYS[2] ~= base .. 'log' then
  return redis.error_reply('EMQ_BAD_ARG keys must be the meta and log keys of one topic')
end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local got = redis.pcall('HGET', KEYS[1], 'v')
if type(got) == 'table' and got.err then return redis.error_reply('EMQ_WRONGTYPE the topic meta key is not a hash') end
local stored = got
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION topic data is protocol ' .. stored .. ', script speaks ' .. V)
end
local maxBytes = int(ARGV[2], 1, 536870912)
local n = int(ARGV[3], 1, 1000000000)
if not maxBytes or not n then
  return redis.error_reply('EMQ_BAD_ARG payload limit must be an integer in 1..536870912 and the event count an integer >= 1')
end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 events per call') end
local traced = #ARGV == 3 + 2 * n
if #ARGV ~= 3 + n and not traced then
  return redis.error_reply('EMQ_BAD_ARG expected 2 keys and ' .. n .. ' payloads (and optionally ' .. n .. ' traceparents)')
end
for i = 1, n do
  local payload = ARGV[3 + i]
  if #payload == 0 then return redis.error_reply('EMQ_BAD_ARG event ' .. i .. ' has an empty payload') end
  if #payload > maxBytes then
    return redis.error_reply('EMQ_PAYLOAD_TOO_LARGE event ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. maxBytes)
  end
  if traced and #ARGV[3 + n + i] > 256 then
    return redis.error_reply('EMQ_BAD_ARG event ' .. i .. ' traceparent is longer than 256 bytes')
  end
end
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'stream' and kind ~= 'none' then
  return redis.error_reply('EMQ_WRONGTYPE the log key holds a ' .. kind .. ', not a stream')
end

if not stored then redis.call('HSET', KEYS[1], 'v', V) end
local out = {}
for i = 1, n do
  local tp = traced and ARGV[3 + n + i] or ''
  if tp == '' then out[i] = redis.call('XADD', KEYS[2], '*', 'p', ARGV[3 + i])
  else out[i] = redis.call('XADD', KEYS[2], '*', 'p', ARGV[3 + i], 'tp', tp) end
end
return out
