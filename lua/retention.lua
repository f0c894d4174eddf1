#!lua flags=allow-oom
-- retention.lua: EchoMQ protocol v2. Built from lua/src/retention.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Sets a Bus topic's retention policy (replacing the old one) in the topic's meta hash, where
-- every node's trimmer (trim.lua) reads it. The meta gets `v` when it has none.
-- Flag allow-oom: a bounded write (four policy fields of one hash) that lets an operator set a
-- tighter policy for trim.lua to free memory with; as a legacy script under OOM it would delete
-- the old policy (HDEL is not refused) and then be refused at its HSET, leaving no policy.
--
-- @key meta emq:{t}:bus:meta topic meta hash (`v` version, policy fields)
-- @arg version version the protocol version
-- @arg max-len ""|1..1000000000 maxLen: entries to keep in the live log ("" = no length bound)
-- @arg max-age-ms ""|1..3153600000000 maxAgeMs: age bound of the live log ("" = no age bound)
-- @arg archive-max-age-ms ""|1..3153600000000 archiveMaxAgeMs: age bound of the archive
--   ("" = keep forever)
-- @arg archive-max-bytes? 0..1099511627776|unbounded archiveMaxBytes (optional, additive): byte
--   bound of the archive, 0 = no archive (trimmed entries are deleted), `unbounded` = no byte
--   bound, stored as that word so a runtime can tell an explicit opt-out from a policy that never
--   had the field. Absent (a four-argument call): the stored archiveMaxBytes is left as it is.
-- @returns 1
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a key that is not a topic meta
--   key), EMQ_WRONGTYPE (the meta key is not a hash). Every check precedes the first write.
-- @flags allow-oom
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
-- The argument reader: each takes the argument, its range and its name, and answers the value or
-- refuses with EMQ_BAD_ARG naming the argument and what it must be.
local function need_int(s, lo, hi, what)
  local v = int(s, lo, hi)
  if not v then fail('BAD_ARG', what .. ' must be a decimal integer in ' .. lo .. '..' .. hi) end
  return v
end
-- The base `emq:{<t>}:bus:` of a Bus topic's keys, from its meta key (KEYS[1]).
local function topic_base(meta)
  if type(meta) ~= 'string' or #meta > 114 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:bus:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<topic>}:bus:meta of a topic')
  end
  return string.sub(meta, 1, -5)
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
need(#KEYS == 1 and (#ARGV == 4 or #ARGV == 5), 'expected 1 key and 4 or 5 arguments')
topic_base(KEYS[1])
local stored = topic_meta(KEYS[1])[1]
local names = { 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs' }
local limits = { 1000000000, 3153600000000, 3153600000000 }
local set = {}
for i = 1, 3 do
  local v = ARGV[i + 1]
  if v ~= '' then
    set[#set + 1] = names[i]
    set[#set + 1] = string.format('%d', need_int(v, 1, limits[i], names[i]))
  end
end
if #ARGV == 5 then
  local b = ARGV[5]
  if b ~= 'unbounded' then
    b = int(b, 0, 1099511627776)
    if not b then fail('BAD_ARG', 'archiveMaxBytes must be a decimal integer in 0..1099511627776 or unbounded') end
    b = string.format('%d', b)
  end
  set[#set + 1] = 'archiveMaxBytes'
  set[#set + 1] = b
end

redis.call('HDEL', KEYS[1], 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs')
stamp_topic(KEYS[1], stored)
if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
return 1
end
return run(main)
