-- schedule.lua: EchoMQ protocol v2. Built from lua/src/schedule.lua and lua/lib/ by `npm run lua:build`; do not edit.
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
-- One of a set of words, given as a table word -> true.
local function need_word(s, words, what)
  if not words[s] then
    local list = {}
    for w in pairs(words) do list[#list + 1] = w end
    table.sort(list)
    fail('BAD_ARG', what .. ' must be one of ' .. table.concat(list, ', '))
  end
  return s
end
-- The key grammar (docs/protocol.md §2): every key a script is given must be the one the grammar
-- spells. A queue's keys share the base `emq:{<q>}:` (q a name: 1..100 of `A-Za-z0-9_.-`), read
-- from its meta key, KEYS[1]; keys a script reaches without declaring them are spelt from it too.
local function queue_base(meta)
  if type(meta) ~= 'string' or #meta > 110 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<queue>}:meta of a queue')
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
-- A queue's meta hash (docs/protocol.md §2), read once per call with every field a transition
-- uses (parts of a composed script share the read: no part writes a field another part reads),
-- and its data version checked. Fields: v, elog, token, lanes, xtra, paused, gcap, keepc, rate (the queue's
-- stored rate limit "<max> <ms>"), gpol (its stored group policy), gpaused (its paused lanes; all
-- three written by policy.lua), stamp (claims record attempt starts, claim.lua), refs (the queue uses business ids, refs.lua).
local meta_memo = nil
local function queue_meta(key)
  if not meta_memo then
    local m = checked(redis.pcall('HMGET', key, 'v', 'elog', 'token', 'lanes', 'xtra', 'paused', 'gcap', 'keepc', 'rate', 'gpol', 'gpaused', 'stamp', 'refs'), key)
    need_data_version(m[1], key)
    meta_memo = { v = m[1], elog = tonumber(m[2]) or 0, token = m[3], lanes = m[4], xtra = m[5], paused = m[6], gcap = m[7], keepc = m[8], rate = m[9], gpol = m[10], gpaused = m[11], stamp = m[12], refs = m[13] }
  end
  return meta_memo
end
-- A name of the key grammar (docs/protocol.md §2): a queue, a lane group, a schedule, a flow
-- child's key: 1..100 bytes of `A-Za-z0-9_.-`. True when s is not one.
local function bad_name(s)
  return type(s) ~= 'string' or #s == 0 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
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
local function main(KEYS, ARGV)
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
end
return run(main)
