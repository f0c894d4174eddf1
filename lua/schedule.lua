-- schedule.lua: EchoMQ protocol v1. Upserts or removes one recurring schedule of a queue, by
-- name. A schedule is its spec text in `schedules` and its next tick in `ticks`; tick.lua turns
-- a due tick into one job. An upsert of the very spec text already stored changes nothing (every
-- app instance may declare the same schedule at boot without moving its next tick); another
-- spec replaces the stored one and restarts the schedule at the caller's first tick.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (protocol version `v`)
-- KEYS[2]  emq:{q}:schedules  hash name -> spec text (JSON, see docs/protocol.md §11)
-- KEYS[3]  emq:{q}:ticks      zset name -> next tick (epoch ms, server clock)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  "set" or "del"
-- ARGV[3]  schedule name (1..100 bytes of [A-Za-z0-9_.-])
-- set:     ARGV[4] spec text (a JSON object with a non-empty string `payload`, 1..limit bytes);
--          ARGV[5] largest spec in bytes (1..536870912); ARGV[6] first tick (1..7258118400000,
--          computed by the caller from the server clock; used only when the spec is new or changed)
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Returns: set: 1 created, 2 replaced (tick restarted), 0 unchanged (the tick is kept, or
--          written when it was missing); del: 1 removed, 0 there was no such schedule.
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key that is not
--          the one the key grammar spells for the queue of KEYS[1]), EMQ_VERSION,
--          EMQ_WRONGTYPE (a key holds another type), EMQ_PAYLOAD_TOO_LARGE. Every check comes
--          before the first write.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local function refused(r, key)
  if type(r) ~= 'table' or not r.err then return nil end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' holds a value of another type than the protocol gives it')
  end
  return r
end
if #KEYS ~= 3 or #ARGV < 3 then return redis.error_reply('EMQ_BAD_ARG expected 3 keys and at least 3 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'schedules' or KEYS[3] ~= b .. 'ticks' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, schedules, ticks of one queue, in this order')
end
local op, name = ARGV[2], ARGV[3]
if op ~= 'set' and op ~= 'del' then return redis.error_reply('EMQ_BAD_ARG the operation must be set or del') end
if #name == 0 or #name > 100 or not string.match(name, '^[A-Za-z0-9_.-]+$') then
  return redis.error_reply('EMQ_BAD_ARG a schedule name is 1..100 bytes of letters, digits, _ . -')
end
local spec, first
if op == 'set' then
  if #ARGV ~= 6 then return redis.error_reply('EMQ_BAD_ARG set expects 6 arguments') end
  spec = ARGV[4]
  local limit = int(ARGV[5], 1, 536870912)
  first = int(ARGV[6], 1, 7258118400000)
  if not limit or not first then
    return redis.error_reply('EMQ_BAD_ARG the spec limit must be 1..536870912 and the first tick 1..7258118400000')
  end
  if #spec == 0 then return redis.error_reply('EMQ_BAD_ARG the spec is empty') end
  if #spec > limit then
    return redis.error_reply('EMQ_PAYLOAD_TOO_LARGE the spec is ' .. #spec .. ' bytes, the limit is ' .. limit)
  end
  local ok, s = pcall(cjson.decode, spec)
  if not ok or type(s) ~= 'table' or type(s.payload) ~= 'string' or #s.payload == 0 then
    return redis.error_reply('EMQ_BAD_ARG the spec must be a JSON object with a non-empty string payload')
  end
elseif #ARGV ~= 3 then
  return redis.error_reply('EMQ_BAD_ARG del expects 3 arguments')
end

-- Reads first: every key this call writes is read before anything is written.
local meta = redis.pcall('HGET', KEYS[1], 'v')
local e = refused(meta, KEYS[1])
if e then return e end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
local stored = redis.pcall('HGET', KEYS[2], name)
e = refused(stored, KEYS[2])
if e then return e end
local tick = redis.pcall('ZSCORE', KEYS[3], name)
e = refused(tick, KEYS[3])
if e then return e end

if op == 'del' then
  if not stored and not tick then return 0 end
  redis.call('HDEL', KEYS[2], name)
  redis.call('ZREM', KEYS[3], name)
  return 1
end
if not meta then redis.call('HSET', KEYS[1], 'v', V) end
if stored == spec then
  if not tick then redis.call('ZADD', KEYS[3], first, name) end
  return 0
end
redis.call('HSET', KEYS[2], name, spec)
redis.call('ZADD', KEYS[3], first, name)
if stored then return 2 end
return 1
