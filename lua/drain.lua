#!lua flags=allow-oom
-- drain.lua: EchoMQ protocol v2. Built from lua/src/drain.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Drops waiting jobs: the oldest `limit` ids of the queue's pending lists (the priority levels
-- highest first, then the group lanes of the ring, then `pending`) are popped and each job is
-- removed with its row, payload and own options. A flow child's parent is told the child ended
-- `cancelled` (its hand-off `d:<id>` is written to the outbox, as cancel.lua writes it). Ghosts
-- met on the way are dropped as claim drops them (their payload back to `data`, meta `ghosts` −
-- 1). Scheduled and active jobs are not touched. Bounded per call: at most `limit` ids popped, at
-- most 1000 ring entries read. A level list is `<pending>:<p>` (p 1..9) and a group lane
-- `emq:{q}:group:<g>`, spelt from the queue's base (same slot).
-- Flag allow-oom: it frees jobs; the only thing it adds is one small outbox entry per drained
-- flow child (bounded by the limit, and far less than the job it frees).
--
-- @key meta emq:{q}:meta queue meta hash (`lanes`, `ghosts`)
-- @key pending emq:{q}:pending list of pending ids (level p 1..9: `<pending>:<p>`, same slot)
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> the job's own options
-- @key job emq:{q}:job: prefix of job rows
-- @key levels emq:{q}:levels zset of the priority levels with ids
-- @key groups emq:{q}:groups the ring of lanes (group `g`: list `emq:{q}:group:<g>`)
-- @key outbox emq:{q}:outbox flows: the hand-offs this queue owes
-- @key outdue emq:{q}:outdue flows: entry id -> due at
-- @arg version version the protocol version
-- @arg limit 1..1000 the most ids to pop
-- @returns { drained, more }: the jobs removed, and 1 when the call stopped at its limit.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1], a limit out of range), EMQ_WRONGTYPE. Every check and read comes before
--   the first write.
-- @flags allow-oom
-- @uses keys types meta flow-child limit refs
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
-- The text of a `d:` entry: a finished job's outcome for its parent (`<queue> <id>`).
local function delivery_text(parent, id, outcome, text)
  return 'd ' .. parent .. ' ' .. id .. ' ' .. outcome .. ' ' .. text
end
-- Writes one entry, due at `at` (now for a relay to take; now + lease when leased to the caller).
local function hand_off(box, due, eid, text, at)
  redis.call('HSET', box, eid, text)
  redis.call('ZADD', due, at, eid)
end
-- The hand-off `d:<id>` = "d <parent> <id> <outcome> <text>", due now.
local function tell_parent(box, due, parent, id, outcome, text)
  hand_off(box, due, 'd:' .. id, delivery_text(parent, id, outcome, text), now_ms())
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
-- The bound of an operator's bulk call (drain, revive all): 1..1000 in canonical decimal (no
-- sign, no leading zero, at most 4 digits), or EMQ_BAD_ARG.
local function need_limit(s)
  if type(s) ~= 'string' or #s > 4 or not string.match(s, '^[1-9]%d*$') or tonumber(s) > 1000 then
    fail('BAD_ARG', 'limit must be 1..1000')
  end
  return tonumber(s)
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
-- Drops the business ids of the jobs `ids` (their rows deleted by the caller), when the queue
-- uses business ids (`on`): both fields of each, the forward one only while it still names this
-- job. Two reads and one HDEL per call, none when `on` is false.
local function refs_drop(b, ids, on)
  if not on or #ids == 0 then return end
  local key = b .. 'refs'
  local refs = checked(redis.pcall('HMGET', key, unpack(ids)), key)
  local del, mine, fwd = {}, {}, {}
  for i = 1, #ids do
    if refs[i] then
      del[#del + 1] = ids[i]
      mine[#mine + 1] = ids[i]
      fwd[#fwd + 1] = refs[i]
    end
  end
  if #fwd == 0 then return end
  local now = redis.call('HMGET', key, unpack(fwd))
  for i = 1, #fwd do
    if now[i] == mine[i] then del[#del + 1] = fwd[i] end
  end
  redis.call('HDEL', key, unpack(del))
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
need(#KEYS == 9 and #ARGV == 2, 'expected 9 keys and 2 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'pending', 'data', 'opts', 'job:', 'levels', 'groups', 'outbox', 'outdue' })
local left = need_limit(ARGV[2])
local dm = queue_meta(KEYS[1])
local lanes = dm.lanes
need_types({ KEYS[3], 'hash', KEYS[4], 'hash', KEYS[6], 'zset', KEYS[7], 'list', KEYS[8], 'hash', KEYS[9], 'zset' })
-- The lists, in drain order: levels 9..1, the group lanes of the ring, level 0.
local lists = {}
if lanes == '1' then
  local lv = redis.call('ZRANGE', KEYS[6], 0, -1)
  for i = #lv, 1, -1 do lists[#lists + 1] = { KEYS[2] .. ':' .. lv[i], lv[i] } end
  local ring, seen = redis.call('LRANGE', KEYS[7], -1000, -1), {}
  for i = #ring, 1, -1 do
    local g = ring[i]
    if g ~= '' and not seen[g] then seen[g] = true; lists[#lists + 1] = { b .. 'group:' .. g, false } end
  end
end
lists[#lists + 1] = { KEYS[2], false }
local picks, ids = {}, {}
for i = 1, #lists do
  if left == 0 then break end
  need_type(lists[i][1], 'list')
  local got = redis.call('LRANGE', lists[i][1], -left, -1)
  if #got > 0 then
    picks[#picks + 1] = { lists[i][1], #got, lists[i][2] }
    for j = #got, 1, -1 do ids[#ids + 1] = got[j] end
    left = left - #got
  end
end
if #ids == 0 then return { 0, 0 } end
local pays = redis.call('HMGET', KEYS[3], unpack(ids))
local rows = {}
for i = 1, #ids do
  local row = KEYS[5] .. ids[i]
  need_type(row, 'hash')
  rows[i] = redis.call('HMGET', row, 'parent', 'payload')
end
-- Writes (the clock is read at the first hand-off, if any).
for i = 1, #picks do
  redis.call('RPOP', picks[i][1], picks[i][2])
  if picks[i][3] and redis.call('LLEN', picks[i][1]) == 0 then redis.call('ZREM', KEYS[6], picks[i][3]) end
end
local drained, ghosts, boxed, gone = 0, 0, 0, {}
for i = 1, #ids do
  local id, p, row = ids[i], pays[i], KEYS[5] .. ids[i]
  if p == '' then
    ghosts = ghosts + 1
    if rows[i][2] then
      redis.call('HSET', KEYS[3], id, rows[i][2])
      redis.call('HDEL', row, 'payload')
    else
      redis.call('HDEL', KEYS[3], id)
    end
  elseif p then
    if rows[i][1] then
      tell_parent(KEYS[8], KEYS[9], rows[i][1], id, 'cancelled', 'drained')
      boxed = boxed + 1
    end
    redis.call('DEL', row)
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    drained = drained + 1
    gone[drained] = id
  end
end
refs_drop(b, gone, dm.refs == '1')
if ghosts > 0 then redis.call('HINCRBY', KEYS[1], 'ghosts', -ghosts) end
if boxed > 0 then redis.call('SPUBLISH', KEYS[8], boxed) end
return { drained, left == 0 and 1 or 0 }
end
return run(main)
