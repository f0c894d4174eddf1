-- publish.lua: EchoMQ protocol v2. Built from lua/src/publish.lua and lua/lib/ by `npm run lua:build`; do not edit.
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
-- The protocol version this build speaks: every script is called with it as ARGV[1] and refuses
-- any other first (run.lua), before it looks at a count, a key or an argument.
local PROTOCOL = '2'
-- The versions of queue data (meta `v`) these scripts read; a queue whose data is of another
-- version is refused, so a runtime of one version never half-applies a transition to another's.
-- v2 reads v1's data unchanged (the layout did not change; docs/wire-changelog.md).
local DATA_VERSIONS = { ['1'] = true, ['2'] = true }
-- A producer's write moves a queue's (or topic's) data to this version: `v` absent or older
-- becomes PROTOCOL, after which runtimes of an older version are refused by the data check (a v1
-- consumer would ignore the stored policy v2 enforces: one rule, never a silent mix).
local function stamp_version(key, v)
  if v ~= PROTOCOL then redis.call('HSET', key, 'v', PROTOCOL) end
end
-- Refusals. A script refuses by raising `EMQ_<CODE> <message>` (error level 0: no position in
-- the text); run() answers it as the error reply. A script that must write before its last check
-- (claim's pop-as-read) sets `on_refusal`, which run() calls before it answers the refusal.
local refusal_hook = nil
local function fail(code, msg) error('EMQ_' .. code .. ' ' .. msg, 0) end
-- Refuses with EMQ_BAD_ARG unless ok (a count, a shape, a mode that does not hold).
local function need(ok, msg) if not ok then fail('BAD_ARG', msg) end end
-- Refuses data of another protocol version than these scripts read (meta `v`, when present).
local function need_data_version(v, key)
  if v and not DATA_VERSIONS[v] then fail('VERSION', key .. ' holds protocol ' .. v .. ' data, script speaks ' .. PROTOCOL) end
end
-- A decimal integer in [lo, hi], or nil: an optional `-`, at most 16 digits; refuses NaN, inf,
-- fractions, exponents, `+`, hex and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- The base `emq:{<t>}:bus:` of a Bus topic's keys, from its meta key (KEYS[1]).
local function topic_base(meta)
  if type(meta) ~= 'string' or #meta > 114 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:bus:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<topic>}:bus:meta of a topic')
  end
  return string.sub(meta, 1, -5)
end
-- Checks keys[i] = base .. names[i] for i = from..#names (names[1] is the meta key's `meta`).
local function need_keys(keys, base, names, from)
  for i = from or 2, #names do
    if keys[i] ~= base .. names[i] then
      fail('BAD_ARG', 'KEYS must be the keys ' .. table.concat(names, ', ') .. ' of one queue, in this order (KEYS[' .. i .. '] is not)')
    end
  end
end
-- The runner every built script ends with (`return run(main)`): the version is checked before
-- anything else, so a caller of another version always hears EMQ_VERSION naming both versions;
-- then the script's body runs, and a refusal it raised (or a command's error) is its reply.
local function version_error(v)
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. PROTOCOL .. ', caller speaks ' .. string.sub(tostring(v), 1, 32))
end
-- A call's outcome as an error reply: the hook (if any) first, so a refusal still writes nothing.
local function refusal(r)
  if refusal_hook then local undo = refusal_hook; refusal_hook = nil; undo() end
  return redis.error_reply(type(r) == 'table' and tostring(r.err) or tostring(r))
end
local function run(main)
  if ARGV[1] ~= PROTOCOL then return version_error(ARGV[1]) end
  local ok, r = pcall(main, KEYS, ARGV)
  if ok then return r end
  return refusal(r)
end
-- Key types: a key that holds another type than the protocol gives it is EMQ_WRONGTYPE, found
-- before the first write (Valkey does not roll a script back).
local function need_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then fail('WRONGTYPE', key .. ' is a ' .. t .. ', not a ' .. want) end
end
-- The reply of a command run through redis.pcall: WRONGTYPE becomes EMQ_WRONGTYPE naming the key,
-- any other error reply is raised as it is (OOM, NOPERM keep their codes); a reply passes.
local function checked(r, key)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) == 'WRONGTYPE' then fail('WRONGTYPE', key .. ' holds a value of another type than the protocol gives it') end
    error(r.err, 0)
  end
  return r
end
-- A Bus topic's meta hash (docs/protocol.md §2) carries its own data version `v` (next to the
-- retention policy): read in the one command a script makes of the hash (HGET of `v`, or HMGET
-- of `v` and the fields asked), WRONGTYPE checked, and refused when it is another version's.
-- Answers { v, field1, … } (false for an absent field).
local function topic_meta(key, ...)
  local m
  if select('#', ...) == 0 then m = { checked(redis.pcall('HGET', key, 'v'), key) }
  else m = checked(redis.pcall('HMGET', key, 'v', ...), key) end
  need_data_version(m[1], key)
  return m
end
-- Stamps a topic's meta with this version on a write (v absent or older: stamp_version).
local function stamp_topic(key, v) stamp_version(key, v) end
local function main(KEYS, ARGV)
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
end
return run(main)
