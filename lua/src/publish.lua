-- Appends one or many events to a topic's retained log, in one atomic call: every entry is
-- `XADD <log> * p <payload>`, its id minted by the server clock (all entries of one call share
-- the call's millisecond, in order). Payloads are opaque JSON text. Retention is not applied here
-- (trim.lua does it). An optional block of n traceparents after the payloads gives an entry a
-- `tp` field (`XADD <log> * p <payload> tp <traceparent>`), the producer's W3C trace context
-- (docs/telemetry.md); an empty one adds no field. The topic meta gets `v` on its first publish.
-- No script flag: a publish grows the log (bounded only by trim.lua's later pass), so under OOM
-- it is refused at its first write, as a legacy script.
--
-- @key meta emq:{t}:bus:meta topic meta hash (protocol version `v`, retention policy)
-- @key log emq:{t}:bus:log stream: the event log
-- @arg version version the protocol version
-- @arg max-bytes 1..536870912 largest payload in bytes
-- @arg n 1..1000 the number of events (a decimal integer >= 1; above 1000 is EMQ_BATCH_TOO_LARGE)
-- @arg payload* json the n payloads (JSON text, non-empty), in publish order
-- @arg traceparent* bytes:0..256 optional: one traceparent per event (empty: none)
-- @returns an array of n stream ids `<ms>-<seq>`, in publish order.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, keys that are not the
--   topic's), EMQ_WRONGTYPE (meta is not a hash or the log is not a stream),
--   EMQ_PAYLOAD_TOO_LARGE, EMQ_BATCH_TOO_LARGE. Every check comes before the first write.
-- @uses args keys types topic-meta
need(#KEYS == 2 and #ARGV >= 4, 'expected 2 keys and at least 4 arguments')
local base = topic_base(KEYS[1])
need_keys(KEYS, base, { 'meta', 'log' })
local stored = topic_meta(KEYS[1])[1]
local maxBytes = int(ARGV[2], 1, 536870912)
local n = int(ARGV[3], 1, 1000000000)
need(maxBytes and n, 'payload limit must be an integer in 1..536870912 and the event count an integer >= 1')
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 events per call') end
local traced = #ARGV == 3 + 2 * n
need(#ARGV == 3 + n or traced, 'expected 2 keys and ' .. n .. ' payloads (and optionally ' .. n .. ' traceparents)')
for i = 1, n do
  local payload = ARGV[3 + i]
  need(#payload > 0, 'event ' .. i .. ' has an empty payload')
  if #payload > maxBytes then
    fail('PAYLOAD_TOO_LARGE', 'event ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. maxBytes)
  end
  need(not traced or #ARGV[3 + n + i] <= 256, 'event ' .. i .. ' traceparent is longer than 256 bytes')
end
need_type(KEYS[2], 'stream')

stamp_topic(KEYS[1], stored)
local out = {}
for i = 1, n do
  local tp = traced and ARGV[3 + n + i] or ''
  if tp == '' then out[i] = redis.call('XADD', KEYS[2], '*', 'p', ARGV[3 + i])
  else out[i] = redis.call('XADD', KEYS[2], '*', 'p', ARGV[3 + i], 'tp', tp) end
end
return out
