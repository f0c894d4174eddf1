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
-- @key fires? emq:{q}:fires hash name -> jobs its ticks wrote (tick.lua, for a spec's `limit`):
--   given, a set that restarts the tick and a del also remove the name's count
-- @arg version version the protocol version
-- @arg op set|del upsert or remove
-- @arg name bytes:1..100 the schedule name (1..100 bytes of [A-Za-z0-9_.-])
-- @arg spec? json set only: the spec text, a JSON object with a non-empty string `payload`,
--   1..limit bytes
-- @arg limit? 1..536870912 set only: the largest spec in bytes
-- @arg first? 1..7258118400000 set only: the first tick (computed by the caller from the server
--   clock; used only when the spec is new or changed)
-- @arg keep? 1..1 set only, optional: keep the tick grid when only the payload or options change
-- @mode set 6 arguments: version, `set`, name, spec, limit, first tick
-- @mode keep 7 arguments: `set` and "1": a stored spec of the same `cron`, `tz`, `every` and
--   `start` (compared after cjson decoding) is replaced keeping its next tick (and its count in
--   `fires`): reply 3. A stored tick that is gone (the schedule ended) is set to the first tick.
-- @mode del 3 arguments: version, `del`, name
-- @returns set: 1 created, 2 replaced (tick restarted), 0 unchanged (the tick is kept, or
--   written when it was missing), 3 (keep mode only) replaced keeping its tick grid; del: 1
--   removed, 0 there was no such schedule.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key
--   that is not the one the key grammar spells for the queue of KEYS[1]), EMQ_WRONGTYPE (a key
--   holds another type), EMQ_PAYLOAD_TOO_LARGE. Every check comes before the first write.
-- @uses args keys types meta names
need((#KEYS == 3 or #KEYS == 4) and #ARGV >= 3, 'expected 3 (or 4) keys and at least 3 arguments')
need_keys(KEYS, queue_base(KEYS[1]), #KEYS == 4 and { 'meta', 'schedules', 'ticks', 'fires' } or { 'meta', 'schedules', 'ticks' })
local op, name = need_word(ARGV[2], { set = true, del = true }, 'the operation'), ARGV[3]
need(not bad_name(name), 'a schedule name is 1..100 bytes of letters, digits, _ . -')
local spec, first, keep, s
if op == 'set' then
  need(#ARGV == 6 or (#ARGV == 7 and ARGV[7] == '1'), 'set expects 6 arguments (7 with keep "1")')
  keep = #ARGV == 7
  spec = ARGV[4]
  local limit = int(ARGV[5], 1, 536870912)
  first = int(ARGV[6], 1, 7258118400000)
  need(limit and first, 'the spec limit must be 1..536870912 and the first tick 1..7258118400000')
  need(#spec > 0, 'the spec is empty')
  if #spec > limit then fail('PAYLOAD_TOO_LARGE', 'the spec is ' .. #spec .. ' bytes, the limit is ' .. limit) end
  local ok
  ok, s = pcall(cjson.decode, spec)
  need(ok and type(s) == 'table' and type(s.payload) == 'string' and #s.payload > 0,
    'the spec must be a JSON object with a non-empty string payload')
else
  need(#ARGV == 3, 'del expects 3 arguments')
end

-- Reads first: every key this call writes is read before anything is written.
local stored_v = queue_meta(KEYS[1]).v
local stored = checked(redis.pcall('HGET', KEYS[2], name), KEYS[2])
local tick = checked(redis.pcall('ZSCORE', KEYS[3], name), KEYS[3])
local fires = KEYS[4]
if fires then need_type(fires, 'hash') end

if op == 'del' then
  if not stored and not tick then return 0 end
  redis.call('HDEL', KEYS[2], name)
  redis.call('ZREM', KEYS[3], name)
  if fires then redis.call('HDEL', fires, name) end
  return 1
end
stamp_version(KEYS[1], stored_v)
if stored == spec then
  if not tick then redis.call('ZADD', KEYS[3], first, name) end
  return 0
end
-- Keep mode: the same grid (cron, tz, every, start) keeps the next tick and the count.
if keep and stored then
  local ok, old = pcall(cjson.decode, stored)
  if ok and type(old) == 'table' and old.cron == s.cron and old.tz == s.tz and old.every == s.every and old.start == s.start then
    redis.call('HSET', KEYS[2], name, spec)
    if not tick then redis.call('ZADD', KEYS[3], first, name) end
    return 3
  end
end
redis.call('HSET', KEYS[2], name, spec)
redis.call('ZADD', KEYS[3], first, name)
if fires then redis.call('HDEL', fires, name) end
if stored then return 2 end
return 1
