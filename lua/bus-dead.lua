#!lua flags=allow-oom
-- bus-dead.lua: EchoMQ protocol v2. Built from lua/src/bus-dead.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Operator actions on a topic's dead letters (written by dead-letter.lua): `replay` appends each
-- one's payload to the topic's log again as a new event (`XADD <log> * p <payload>`, a new id;
-- every group of the topic receives it, as any publish) and deletes the dead letter; `purge`
-- deletes dead letters. Bounded per call: the given dead letter ids, or the oldest n.
-- Flag allow-oom: purge frees memory and is the operator's tool when the server is out of it;
-- replay moves at most n (1..1000) entries from the dead log to the log, deleting each.
--
-- @key meta emq:{t}:bus:meta topic meta hash (version fence)
-- @key log emq:{t}:bus:log the event log (stream)
-- @key dead emq:{t}:bus:dead the dead-letter log (stream)
-- @arg version version the protocol version
-- @arg action replay|purge what to do
-- @arg n 1..1000 how many dead letters (a decimal integer without leading zeros)
-- @arg id* stream-id optional: exactly n dead-letter stream ids (`<ms>-<seq>`); absent: the oldest n
-- @returns { done, more }: the dead letters replayed (or purged), and 1 when (without ids given)
--   older dead letters than this call's remain. A given id that is not in the dead log is
--   skipped.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, keys of different topics, an unknown action, a
--   malformed stream id), EMQ_WRONGTYPE (meta not a hash, log or dead not a stream). Every check
--   and read comes before the first write.
-- @flags allow-oom
-- @uses args keys types topic-meta
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
-- Several at once: a flat list key, type, key, type, …
local function need_types(list)
  for i = 1, #list, 2 do need_type(list[i], list[i + 1]) end
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
need(#KEYS == 3 and #ARGV >= 3, 'expected 3 keys and at least 3 arguments')
need_keys(KEYS, topic_base(KEYS[1]), { 'meta', 'log', 'dead' })
local action = need_word(ARGV[2], { replay = true, purge = true }, 'the action')
local s = ARGV[3]
need(#s <= 4 and string.match(s, '^[1-9]%d*$') and tonumber(s) <= 1000, 'n must be 1..1000')
local n = tonumber(s)
need(#ARGV == 3 or #ARGV == 3 + n, 'give n dead-letter ids, or none')
for i = 4, #ARGV do
  need(#ARGV[i] <= 41 and string.match(ARGV[i], '^%d+%-%d+$'), 'a dead-letter id must be a stream id <ms>-<seq>')
end
topic_meta(KEYS[1])
need_types({ KEYS[2], 'stream', KEYS[3], 'stream' })
local entries, more = {}, 0
if #ARGV == 3 then
  entries = redis.call('XRANGE', KEYS[3], '-', '+', 'COUNT', n + 1)
  if #entries > n then entries[#entries] = nil; more = 1 end
else
  for i = 4, #ARGV do
    local e = redis.call('XRANGE', KEYS[3], ARGV[i], ARGV[i])
    if #e == 1 then entries[#entries + 1] = e[1] end
  end
end
if #entries == 0 then return { 0, more } end
local ids = {}
for i = 1, #entries do
  ids[i] = entries[i][1]
  if action == 'replay' then
    local f, p = entries[i][2], nil
    for j = 1, #f, 2 do if f[j] == 'p' then p = f[j + 1] end end
    if p then redis.call('XADD', KEYS[2], '*', 'p', p) end
  end
end
redis.call('XDEL', KEYS[3], unpack(ids))
return { #ids, more }
end
return run(main)
