#!lua flags=allow-oom
-- remove.lua: EchoMQ protocol v2. Built from lua/src/remove.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Removes one job with everything it holds (row, payload, own options, its index entry) in O(1)
-- whatever the backlog. A pending job's id is not searched for in its list (no LREM): it becomes
-- a ghost as cancel.lua leaves one (`data` = "", meta `ghosts` + 1, and no row), which claim
-- drops when it pops it, deleting the `data` marker. Refused (nothing written): an active job
-- (cancel it first), a `waiting` flow parent, and a flow child that has not finished (its parent
-- waits for its outcome: cancel it instead).
-- Dedup: a removed job whose enqueue wrote `keyof:<id>` (an enqueue with a dedup mode) frees its
-- key (deleted when it still names this job) and the keyof.
-- Flag allow-oom: it only frees (a pending job's payload becomes the "" marker), so it is how an
-- operator frees memory when it is full.
--
-- @key meta emq:{q}:meta queue meta hash (`ghosts`)
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key done emq:{q}:done zset id -> finished at
-- @key dead emq:{q}:dead zset id -> buried at
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> the job's own options (until its first claim)
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @returns 1 removed / 0 refused (active, waiting, or an unfinished flow child) / -1 no such job.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1], KEYS[9] not the row of the id), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check
--   and read comes before the first write.
-- @flags allow-oom
-- @uses ids keys types meta dedup-free refs
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
-- Freeing a job's dedup key (docs/protocol.md §5, enqueue "Dedup modes"): an enqueue with a mode
-- argument wrote `keyof:<id>` = the key of each job that took one; cancel.lua and remove.lua
-- read it (dedup_key_of, before their first write) and, once they end the job, delete the key
-- when it still names this job, and the keyof (dedup_free). Jobs of an enqueue without a mode
-- have no keyof: nothing is freed, as before.

-- Reads only: answers { keyof key, dedup key or nil } or nil when the job has no keyof.
local function dedup_key_of(b, id)
  local kof = b .. 'keyof:' .. id
  local k = checked(redis.pcall('GET', kof), kof)
  if not k then return nil end
  local key = b .. 'key:' .. k
  local holder = checked(redis.pcall('GET', key), key)
  return { kof, holder == id and key or nil }
end
local function dedup_free(f)
  if not f then return end
  if f[2] then redis.call('DEL', f[2]) end
  redis.call('DEL', f[1])
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
-- A declared row key must be the row (`<prefix><id>`) of its own id.
local function need_row(key, prefix, id)
  if key ~= prefix .. id then fail('BAD_ARG', 'the row key ' .. tostring(key) .. ' is not the row of ' .. id) end
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
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'scheduled', 'done', 'dead', 'cancelled', 'data', 'opts', 'job:' })
local id, row = need_id(ARGV[2]), KEYS[9]
need_row(row, KEYS[8], id)
local rm = queue_meta(KEYS[1])
need_types({ KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash', row, 'hash' })
local cur = redis.call('HMGET', row, 'status', 'parent')
local status, parent = cur[1], cur[2]
local payload = redis.call('HGET', KEYS[6], id)
if not status then
  if redis.call('ZSCORE', KEYS[2], id) then
    status = 'scheduled'
  elseif payload and payload ~= '' then
    status = 'pending'
  else
    return -1
  end
end
if status == 'active' or status == 'waiting' then return 0 end
local freed = dedup_key_of(queue_base(KEYS[1]), id) -- its dedup key, freed with the job
if parent and (status == 'pending' or status == 'scheduled') then return 0 end
local set = ({ scheduled = KEYS[2], done = KEYS[3], dead = KEYS[4], cancelled = KEYS[5] })[status]
if status == 'pending' then
  -- A ghost without a row: claim drops the id and deletes the marker.
  redis.call('HSET', KEYS[6], id, '')
  redis.call('HINCRBY', KEYS[1], 'ghosts', 1)
elseif set then
  redis.call('ZREM', set, id)
  -- A cancelled ghost still in its list keeps its "" marker until claim drops the id.
  if payload ~= '' then redis.call('HDEL', KEYS[6], id) end
else
  return 0
end
redis.call('HDEL', KEYS[7], id)
redis.call('DEL', row)
dedup_free(freed)
refs_drop(queue_base(KEYS[1]), { id }, rm.refs == '1')
return 1
end
return run(main)
