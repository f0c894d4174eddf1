#!lua flags=allow-oom
-- cancel.lua: EchoMQ protocol v2. Built from lua/src/cancel.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Cancels a job that has not started: a pending or scheduled job moves to `cancelled` (kept in a
-- bounded set). An active job is not interrupted here; its row is flagged `cancel` = 1: the holder
-- may observe it, and an attempt that ends without completing (retry, reap, release) ends the job
-- `cancelled` (a complete still completes it).
--
-- Bounded cost whatever the backlog: a pending job's id is not searched for in `pending` (no
-- LREM). It stays there as a ghost: its payload moves into its row (field `payload`), its `data`
-- field becomes "" (so an enqueue of the same id is still refused) and meta `ghosts` counts it;
-- claim drops the id when it pops it and puts the payload back into `data`.
--
-- Flows (docs/flows.md): a cancelled job whose row names a parent writes its hand-off `d:<id>` =
-- "d <queue> <parent id> <id> cancelled cancelled" to this queue's outbox, and a cancelled
-- `waiting` parent one entry `x:<child>` = "x <queue> <child>" per child whose outcome has not
-- arrived.
-- Dedup: a job cancelled here (reply 1) whose enqueue wrote `keyof:<id>` (an enqueue with a dedup
-- mode) frees its key: `key:<key>` is deleted when it still names this job, and the keyof too,
-- so the next enqueue of that key adds a new job. A flagged active job keeps its key.
-- Flags: allow-oom. It frees memory (a scheduled entry, its options, the cancelled set's trim) or
-- only flags a row; what it adds is bounded (a few fields, one outbox entry per child still out),
-- and refusing a cancel under OOM would leave unwanted work to run.
--
-- @key meta emq:{q}:meta queue meta hash (`ghosts`: ghost ids in pending; `keepc`: the cancelled
--   retention, recorded here for retry, reap and release)
-- @key pending emq:{q}:pending list of pending ids (not touched: kept in the layout)
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at (bounded retention)
-- @key data emq:{q}:data hash id -> payload ("" for a ghost)
-- @key opts emq:{q}:opts hash id -> the job's own options (until its first claim)
-- @key rows emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key outbox? emq:{q}:outbox with outdue; required when the row names a parent or the job is a
--   waiting flow parent
-- @key outdue? emq:{q}:outdue with outbox; required when the row names a parent or the job is a
--   waiting flow parent
-- @arg version version the protocol version
-- @arg id id:job the job
-- @arg keep 1..1000000 the cancelled retention: how many cancelled rows to keep
-- @returns 1 cancelled (also a `waiting` flow parent); 2 active, flagged; 0 already finished; -1 no
--   such job (integers).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[8] not the row of the id, a flow
--   job without the outbox keys), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes before the first
--   write.
-- @flags allow-oom
-- @uses args ids keys types meta events cancelled flow-child flow-parent dedup-free
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
-- Trimming a bounded set of finished jobs (the morgue, the cancelled set: id -> when): the oldest
-- beyond `keep` go, with their rows and payloads, at most 1000 per call (bounded work). With
-- `ghosts`, a payload of "" (a ghost's marker, cancel.lua) stays, so claim still recognises its
-- id (and an enqueue of it is still refused) until claim pops it. `refs`: the queue uses business
-- ids (meta `refs`), their mappings go with the rows; nil = not known, read from meta (only when
-- rows go).
local function trim_rows(set, data, prefix, keep, ghosts, refs)
  local excess = math.min(redis.call('ZCARD', set) - keep, 1000)
  if excess <= 0 then return end
  local old = redis.call('ZPOPMIN', set, excess)
  local b, gone = string.sub(prefix, 1, -5), {}
  for i = 1, #old, 2 do
    redis.call('DEL', prefix .. old[i])
    if not ghosts or redis.call('HGET', data, old[i]) ~= '' then redis.call('HDEL', data, old[i]) end
    gone[#gone + 1] = old[i]
  end
  if refs == nil then refs = redis.call('HGET', b .. 'meta', 'refs') == '1' end
  refs_drop(b, gone, refs)
end
-- Ends a job `cancelled` at now: its row (with the error text, when one is given, and then its
-- attempt history `hist`, when given, in the same HSET) and the set.
local function end_cancelled(row, set, id, now, err, hist)
  if err and hist then
    redis.call('HSET', row, 'status', 'cancelled', 'error', err, 'finished', now, 'hist', hist)
  elseif err then
    redis.call('HSET', row, 'status', 'cancelled', 'error', err, 'finished', now)
  else
    redis.call('HSET', row, 'status', 'cancelled', 'finished', now)
  end
  redis.call('ZADD', set, now, id)
end
-- Trims the cancelled set to `keep` (bounded work per call): the oldest rows and payloads go,
-- but a ghost's `data` marker stays, and business ids go (`refs`, row-trim.lua).
local function trim_cancelled(set, data, prefix, keep, refs)
  trim_rows(set, data, prefix, keep, true, refs)
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
-- Lifecycle events (docs/protocol.md §5a): one sharded pub/sub message per call and kind on the
-- queue's events channel, and, when its `elog` is above 0, one entry in the bounded events stream.
local function emit(key, elog, kind, ids)
  if #ids == 0 then return end
  local now = now_ms()
  -- Ids and kinds are validated base62 / fixed words: plain concatenation is valid JSON.
  redis.call('SPUBLISH', key, '{"e":"' .. kind .. '","ids":["' .. table.concat(ids, '","') .. '"],"at":' .. now .. '}')
  if elog > 0 then
    redis.call('XADD', key, 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', table.concat(ids, ' '), 'at', now)
  end
end
-- Flows' outbox (docs/protocol.md §10): the cross-queue hand-offs a transition owes, written in
-- the same step to this queue's `outbox` (entry id -> text) and `outdue` (entry id -> due ms).
-- The optional trailing pair of keys of the transitions that may finish a flow job: nil, nil when
-- absent (i > #keys), else both checked against the grammar.
local function outbox_keys(keys, i, base)
  if keys[i] == nil then return nil, nil end
  if keys[i] ~= base .. 'outbox' or keys[i + 1] ~= base .. 'outdue' or keys[i + 2] ~= nil then
    fail('BAD_ARG', 'KEYS[' .. i .. '..' .. (i + 1) .. '] must be the outbox and outdue of the queue, last')
  end
  return keys[i], keys[i + 1]
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
-- What a transition owes a flow (docs/flows.md): a job whose row names a parent and that ends
-- without completing hands its outcome to the parent's queue through this queue's outbox.
-- The outbox pair is required when a hand-off is owed (`why` says why); its types are checked.
local function need_outbox(box, due, why)
  if not box then fail('BAD_ARG', why .. ': the outbox and outdue keys are required') end
  need_types({ box, 'hash', due, 'zset' })
end
-- The hand-off `d:<id>` = "d <parent> <id> <outcome> <text>", due now.
local function tell_parent(box, due, parent, id, outcome, text)
  hand_off(box, due, 'd:' .. id, delivery_text(parent, id, outcome, text), now_ms())
end
-- A waiting flow parent's children still out (docs/flows.md): its row holds `k:<child>` = "<queue>
-- …" per child and `r:<child>` per outcome that arrived. Calls fn(child, queue) for each child
-- without an outcome, in the row's field order (cancel.lua and flow-deliver.lua cancel them).
local function each_child_out(row, fn)
  local all = redis.call('HGETALL', row)
  local have = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r:' then have[string.sub(all[i], 3)] = true end
  end
  for i = 1, #all, 2 do
    local cid = string.sub(all[i], 3)
    if string.sub(all[i], 1, 2) == 'k:' and not have[cid] then fn(cid, string.match(all[i + 1], '^[^ ]+')) end
  end
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
need((#KEYS == 9 or #KEYS == 11) and #ARGV == 3, 'expected 9 (or 11) keys and 3 arguments')
local b, id = queue_base(KEYS[1]), ARGV[2]
need_keys(KEYS, b, { 'meta', 'pending', 'scheduled', 'cancelled', 'data', 'opts', 'job:', 'job:' .. id, 'events' })
local box, due = outbox_keys(KEYS, 10, b)
local m = queue_meta(KEYS[1])
need_id(id)
local keep = need_int(ARGV[3], 1, 1000000, 'the retention')

local row, scheduled, cancelled, data = KEYS[8], KEYS[3], KEYS[4], KEYS[5]
local cur = checked(redis.pcall('HMGET', row, 'status', 'parent'), row)
local status, parent = cur[1], cur[2]
need_types({ scheduled, 'zset', cancelled, 'zset', data, 'hash', KEYS[6], 'hash' })
if (parent or status == 'waiting') and status ~= 'active' then need_outbox(box, due, 'a flow job') end
if m.elog > 0 then need_type(KEYS[9], 'stream') end
local payload = redis.call('HGET', data, id)
local freed = dedup_key_of(b, id) -- its dedup key, freed when the job is cancelled here
if not status then
  -- No row yet: a job that was never claimed is scheduled or pending.
  if redis.call('ZSCORE', scheduled, id) then
    status = 'scheduled'
  elseif payload and payload ~= '' then -- "" is a ghost whose row left the retention
    status = 'pending'
  else
    return -1
  end
end
local now = now_ms()
local function record_keep()
  if m.keepc ~= ARGV[3] then redis.call('HSET', KEYS[1], 'keepc', keep) end
end
if status == 'active' then
  record_keep()
  redis.call('HSET', row, 'cancel', '1')
  emit(KEYS[9], m.elog, 'cancel-requested', { id })
  return 2
end
if status == 'pending' then
  -- The id stays in `pending` as a ghost (see the header): O(1) instead of an LREM.
  if payload and payload ~= '' then
    redis.call('HSET', row, 'payload', payload)
    redis.call('HSET', data, id, '')
    redis.call('HINCRBY', KEYS[1], 'ghosts', 1)
  end
elseif status == 'scheduled' then
  redis.call('ZREM', scheduled, id)
elseif status ~= 'waiting' then
  return 0
end
-- Flow bookkeeping: the parent hears of the cancel; a waiting parent's children still out are
-- cancelled in turn (each relayed like any outbox entry).
local boxed = 0
if status == 'waiting' then
  redis.call('HINCRBY', KEYS[1], 'waits', -1) -- meta `waits` (flow-add.lua)
  each_child_out(row, function(cid, queue)
    hand_off(box, due, 'x:' .. cid, 'x ' .. queue .. ' ' .. cid, now)
    boxed = boxed + 1
  end)
end
if parent then
  tell_parent(box, due, parent, id, 'cancelled', 'cancelled')
  boxed = boxed + 1
end
if boxed > 0 then redis.call('SPUBLISH', box, boxed) end
record_keep()
end_cancelled(row, cancelled, id, now)
redis.call('HDEL', KEYS[6], id)
dedup_free(freed)
trim_cancelled(cancelled, data, KEYS[7], keep, m.refs == '1')
emit(KEYS[9], m.elog, 'cancelled', { id })
return 1
end
return run(main)
