#!lua flags=allow-oom
-- dead-letter.lua: EchoMQ protocol v2. Built from lua/src/dead-letter.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Moves one pending entry of a consumer group to the topic's dead-letter log and acknowledges it,
-- atomically: either both happen or neither. Used when the entry's delivery count reached the
-- group's limit. Only an entry still pending in the group and idle for at least `min idle` ms is
-- moved (a live member that keeps its entry fresh keeps it, and two members racing on one entry
-- write one dead letter). An entry that is pending but no longer in the log (trimmed or deleted)
-- is acknowledged and reported lost; nothing is appended.
-- Flag allow-oom: it moves work forward (the entry leaves the group's pending list) and its one
-- append is capped (`XADD MAXLEN ~ cap`), so a group can still shed a poison entry under OOM.
--
-- @key meta emq:{t}:bus:meta topic meta hash (version fence)
-- @key log emq:{t}:bus:log the event log (stream) the group lives on
-- @key dead emq:{t}:bus:dead the dead-letter log (stream)
-- @arg version version the protocol version
-- @arg group name group name (key grammar)
-- @arg consumer name consumer name of the caller (key grammar)
-- @arg stream-id stream-id stream id of the entry, `<ms>-<seq>`
-- @arg evt id:evt branded event id of the entry (`evt` + 11 base62 digits), recorded as `id`
-- @arg error bytes:0..65536 error text ("" is recorded as "delivery limit exceeded")
-- @arg min-idle 0..86400000 min idle ms: refuse if the entry was touched more recently
-- @arg cap 1..1000000 dead-letter cap, applied with XADD MAXLEN ~
-- @returns {status, deliveries}: status 1 = dead-lettered and acked, 2 = entry gone from the log
--   (acked, nothing appended: the caller reports it lost), 0 = not pending in the group or not
--   idle long enough (nothing written). deliveries = the server's delivery count.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, keys of different topics),
--   EMQ_BAD_NAME, EMQ_BAD_ID, EMQ_WRONGTYPE (meta not a hash, log or dead not a stream),
--   EMQ_NOT_FOUND (NOGROUP: the log or the group does not exist). Every check precedes the first
--   write.
-- @flags allow-oom
-- @uses args ids keys types clock topic-meta
-- The protocol version this build speaks: every script is called with it as ARGV[1] and refuses
-- any other first (run.lua), before it looks at a count, a key or an argument.
local PROTOCOL = '2'
-- The versions of queue data (meta `v`) these scripts read; a queue whose data is of another
-- version is refused, so a runtime of one version never half-applies a transition to another's.
-- v2 reads v1's data unchanged (the layout did not change; docs/wire-changelog.md).
local DATA_VERSIONS = { ['1'] = true, ['2'] = true }
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
-- The argument reader: each takes the argument, its range and its name, and answers the value or
-- refuses with EMQ_BAD_ARG naming the argument and what it must be.
local function need_int(s, lo, hi, what)
  local v = int(s, lo, hi)
  if not v then fail('BAD_ARG', what .. ' must be a decimal integer in ' .. lo .. '..' .. hi) end
  return v
end
-- Time is the server's: the epoch ms of this call, read once (Valkey gives a script call one
-- time, so a second TIME would answer the same; parts of a composed script share the read).
local clock_memo = nil
local function now_ms()
  if not clock_memo then
    local t = redis.call('TIME')
    clock_memo = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_memo
end
-- The 14-byte gate (docs/protocol.md §1): a 3-letter namespace, 11 base62 digits, the body at
-- most 2^64-1 (`LygHa16AHYF`). Compared byte by byte: Lua's `>` on strings follows the server's
-- collation locale, not byte order.
local ID_MAX = 'LygHa16AHYF'
local ID_PATTERN = { job = '^job[0-9A-Za-z]+$', evt = '^evt[0-9A-Za-z]+$', ver = '^ver[0-9A-Za-z]+$' }
local function bad_id(id, ns)
  if type(id) ~= 'string' or #id ~= 14 or not string.match(id, ID_PATTERN[ns or 'job']) then return true end
  local first = string.byte(id, 4)
  if first ~= 76 then return first > 76 end -- 'L', the first digit of the bound: most ids differ there
  for i = 2, 11 do
    local x, y = string.byte(id, i + 3), string.byte(ID_MAX, i)
    if x ~= y then return x > y end
  end
  return false
end
-- An id of namespace ns (default `job`), or EMQ_BAD_ID.
local function need_id(id, ns)
  if bad_id(id, ns) then fail('BAD_ID', 'malformed ' .. (ns or 'job') .. ' id') end
  return id
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
local function main(KEYS, ARGV)
need(#KEYS == 3 and #ARGV == 8, 'expected 3 keys and 8 arguments')
need_keys(KEYS, topic_base(KEYS[1]), { 'meta', 'log', 'dead' })
topic_meta(KEYS[1])
local function badName(s)
  return #s < 1 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
end
local group, consumer, sid, evt, err = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
if badName(group) then fail('BAD_NAME', 'bad group name') end
if badName(consumer) then fail('BAD_NAME', 'bad consumer name') end
need(#sid <= 41 and string.match(sid, '^%d+%-%d+$'), 'bad stream id')
need_id(evt, 'evt')
need(#err <= 65536, 'error text is over 65536 bytes')
local minIdle = need_int(ARGV[7], 0, 86400000, 'min idle')
local cap = need_int(ARGV[8], 1, 1000000, 'dead-letter cap')
need_type(KEYS[3], 'stream')

-- Reads only from here on; a missing log or group (NOGROUP) is refused before any write.
local pel = redis.pcall('XPENDING', KEYS[2], group, sid, sid, 1)
if type(pel) == 'table' and pel.err and string.sub(pel.err, 1, 9) ~= 'WRONGTYPE' then
  if string.find(pel.err, 'NOGROUP', 1, true) then fail('NOT_FOUND', 'NOGROUP no log or no group ' .. group .. ' on it') end
  fail('BAD_ARG', pel.err)
end
pel = checked(pel, KEYS[2])
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
redis.call('XADD', KEYS[3], 'MAXLEN', '~', cap, '*', 'id', evt, 'group', group, 'consumer', consumer,
  'deliveries', deliveries, 'error', err, 'p', payload, 'at', now_ms())
redis.call('XACK', KEYS[2], group, sid)
return {1, deliveries}
end
return run(main)
