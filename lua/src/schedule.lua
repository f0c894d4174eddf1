-- Upserts or removes one recurring schedule of a queue, by name. A schedule is its spec text in
-- `schedules` and its next tick in `ticks`; tick.lua turns a due tick into one job. An upsert of
-- the very spec text already stored changes nothing (every app instance may declare the same
-- schedule at boot without moving its next tick); another spec replaces the stored one and
-- restarts the schedule at the caller's first tick. Every number is a decimal integer: no sign,
-- fraction, exponent or blank.
--
-- No script flags: an upsert grows memory (a spec per name), so it is refused under OOM at its
-- first write, as before (a shebang without allow-oom would refuse it at its start, `del` too).
--
-- @key meta emq:{q}:meta queue meta hash (protocol version `v`)
-- @key schedules emq:{q}:schedules hash name -> spec text (JSON, see docs/protocol.md §11)
-- @key ticks emq:{q}:ticks zset name -> next tick (epoch ms, server clock)
-- @arg version version the protocol version
-- @arg op set|del upsert or remove
-- @arg name bytes:1..100 the schedule name (1..100 bytes of [A-Za-z0-9_.-])
-- @arg spec? json set only: the spec text, a JSON object with a non-empty string `payload`,
--   1..limit bytes
-- @arg limit? 1..536870912 set only: the largest spec in bytes
-- @arg first? 1..7258118400000 set only: the first tick (computed by the caller from the server
--   clock; used only when the spec is new or changed)
-- @mode set 6 arguments: version, `set`, name, spec, limit, first tick
-- @mode del 3 arguments: version, `del`, name
-- @returns set: 1 created, 2 replaced (tick restarted), 0 unchanged (the tick is kept, or
--   written when it was missing); del: 1 removed, 0 there was no such schedule.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key
--   that is not the one the key grammar spells for the queue of KEYS[1]), EMQ_WRONGTYPE (a key
--   holds another type), EMQ_PAYLOAD_TOO_LARGE. Every check comes before the first write.
-- @uses args keys types meta names
need(#KEYS == 3 and #ARGV >= 3, 'expected 3 keys and at least 3 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'schedules', 'ticks' })
local op, name = need_word(ARGV[2], { set = true, del = true }, 'the operation'), ARGV[3]
need(not bad_name(name), 'a schedule name is 1..100 bytes of letters, digits, _ . -')
local spec, first
if op == 'set' then
  need(#ARGV == 6, 'set expects 6 arguments')
  spec = ARGV[4]
  local limit = int(ARGV[5], 1, 536870912)
  first = int(ARGV[6], 1, 7258118400000)
  need(limit and first, 'the spec limit must be 1..536870912 and the first tick 1..7258118400000')
  need(#spec > 0, 'the spec is empty')
  if #spec > limit then fail('PAYLOAD_TOO_LARGE', 'the spec is ' .. #spec .. ' bytes, the limit is ' .. limit) end
  local ok, s = pcall(cjson.decode, spec)
  need(ok and type(s) == 'table' and type(s.payload) == 'string' and #s.payload > 0,
    'the spec must be a JSON object with a non-empty string payload')
else
  need(#ARGV == 3, 'del expects 3 arguments')
end

-- Reads first: every key this call writes is read before anything is written.
local stored_v = queue_meta(KEYS[1]).v
local stored = checked(redis.pcall('HGET', KEYS[2], name), KEYS[2])
local tick = checked(redis.pcall('ZSCORE', KEYS[3], name), KEYS[3])

if op == 'del' then
  if not stored and not tick then return 0 end
  redis.call('HDEL', KEYS[2], name)
  redis.call('ZREM', KEYS[3], name)
  return 1
end
stamp_version(KEYS[1], stored_v)
if stored == spec then
  if not tick then redis.call('ZADD', KEYS[3], first, name) end
  return 0
end
redis.call('HSET', KEYS[2], name, spec)
redis.call('ZADD', KEYS[3], first, name)
if stored then return 2 end
return 1
