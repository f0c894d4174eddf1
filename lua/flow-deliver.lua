#!lua flags=allow-oom
-- flow-deliver.lua: EchoMQ protocol v2. Built from lua/src/flow-deliver.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Delivers one finished child's outcome to its parent, on the parent's queue (docs/flows.md), or
-- a batch of them (to parents of this queue), applied in order as if one call each. Idempotent:
-- the outcome is recorded once in the parent's row (field `r:<child>` = "<outcome> <text>", set
-- only when absent); a repeat changes nothing. While the parent is `waiting`: a child done (or
-- failed or cancelled under the policy `ignore` or `continue`) lowers `deps`, and the last one
-- moves the parent to `pending` exactly once (event `released`); a child failed or cancelled
-- under the policy `release` lowers `deps` and moves the parent to `pending` at once, whatever
-- `deps` is left (its siblings still out run on; their outcomes arrive after it stopped waiting). A child failed or cancelled
-- under the policy `fail` buries the parent (status `dead`, error "child <id> <outcome>: <text>")
-- and writes, in this queue's outbox, one cancel entry (`x:<id>`) per sibling whose outcome has
-- not arrived and, when the parent has a parent of its own, the report of its failure
-- (`d:<parent id>`). An outcome that arrives after the parent stopped waiting is recorded only.
-- The outcome `removed` (never an entry's: a direct call, removeChildDependency) does not record
-- an outcome: the parent forgets the child (`k:<child>` removed, `deps` lowered while it waits,
-- the last one releasing it); answers -1 / 0 (the child's outcome already arrived) / 1 / 2.
-- The outcome `resume` (never an entry's: a direct call, retryChild) makes a root parent buried
-- by this child's failure wait for it again (see resume below); answers 4, -2 or -1.
-- Recording an outcome also drops the child's creation entry (`c:<child id>`) from this queue's
-- outbox if it is still there. Lanes mode (meta `lanes`, docs/protocol.md §5 Fair lanes):
-- `pending` joins the ring `emq:{q}:groups` (spelt from the base) when a push makes it non-empty.
-- Flag allow-oom: it moves flows forward (a parent released or buried, its siblings cancelled),
-- writing at most one outcome per child, bounded by the parent's children; refusing it under OOM
-- would leave parents waiting forever on outcomes already relayed.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key pending emq:{q}:pending list of pending ids
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key dead emq:{q}:dead zset id -> buried at (the morgue)
-- @key data emq:{q}:data hash id -> payload (for jobs trimmed out of the morgue)
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the first delivery's parent row
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key outbox emq:{q}:outbox hash entry id -> entry text (also the relay's channel)
-- @key outdue emq:{q}:outdue zset entry id -> due at (ms)
-- @arg version version the protocol version
-- @arg parent id:job the parent id
-- @arg child id:job the child id
-- @arg outcome done|failed|cancelled|removed|resume how the child ended (removed: the parent stops waiting for it; resume: waits for it again)
-- @arg text bytes:0..536870912 the child's result (JSON text, "" for none) or error text
-- @arg cap 1..1000000 morgue cap
-- @arg more* text (optional) delivery i >= 2 (at most 1000 in all), ARGV[7+4(i-2) .. 10+4(i-2)]:
--   parent id, child id, outcome, text as ARGV[2..5]; its parent's row is KEYS[6] .. parent id
--   (the same slot by the key grammar)
-- @returns -1 no such parent, or the child is not one of its children; 0 already delivered
--   (nothing written); 1 recorded (the parent waits for more, or no longer waits); 2 recorded and
--   the parent released to `pending`; 3 recorded and the parent buried; `resume` only: 4 resumed,
--   -2 buried by this child but not resumable. With more than one
--   delivery, an array of those integers, one per delivery (events: one `released` and one
--   `buried` message per call, naming every parent concerned).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1], KEYS[7] not the row of the first parent, a bad outcome, a text too
--   long, a cap out of range), EMQ_BAD_ID, EMQ_WRONGTYPE, EMQ_BATCH_TOO_LARGE. Every check comes
--   before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta clock events outbox morgue flow-parent
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
-- The morgue (docs/protocol.md §5): `dead`, id -> buried at, capped by the caller's morgue cap.
-- Buries a job at now: its row ends `dead` with the error text (and, given, its attempt history
-- `hist`, in the same HSET), its id joins the morgue.
local function bury(row, dead, id, err, now, hist)
  if hist then redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now, 'hist', hist)
  else redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now) end
  redis.call('ZADD', dead, now, id)
end
-- Trims the morgue to `cap`: the oldest rows and their payloads go (bounded work per call), and
-- their business ids (`refs`, see row-trim.lua).
local function trim_morgue(dead, data, prefix, cap, refs)
  trim_rows(dead, data, prefix, cap, false, refs)
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
need(#KEYS == 10 and #ARGV >= 6 and (#ARGV - 6) % 4 == 0, 'expected 10 keys and 6 arguments (and 4 more per further delivery)')
if #ARGV > 6 + 4 * 999 then fail('BATCH_TOO_LARGE', 'at most 1000 deliveries per call') end
local b = queue_base(KEYS[1])
-- KEYS[7], the first parent's row, is checked against its id below (need_row).
local names = { 'meta', 'pending', 'wake', 'dead', 'data', 'job:', 'job:<id>', 'events', 'outbox', 'outdue' }
local fixed = { unpack(KEYS) }
fixed[7] = b .. names[7]
need_keys(fixed, b, names)
local meta = queue_meta(KEYS[1])
local elog, lanes = meta.elog, meta.lanes == '1'
-- The ring is type-checked here, before any write.
if lanes then need_type(b .. 'groups', 'list') end
-- Deliveries: the first is ARGV[2..5], each further one 4 arguments after the morgue cap.
local cap = need_int(ARGV[6], 1, 1000000, 'morgue cap')
local D = {}
for i = 1, 1 + (#ARGV - 6) / 4 do
  local a = i == 1 and 1 or 6 + 4 * (i - 2)
  local d = { pid = ARGV[a + 1], cid = ARGV[a + 2], outcome = ARGV[a + 3], text = ARGV[a + 4] }
  if bad_id(d.pid) or bad_id(d.cid) then fail('BAD_ID', 'delivery ' .. i .. ': malformed parent or child id') end
  need(d.outcome == 'done' or d.outcome == 'failed' or d.outcome == 'cancelled' or d.outcome == 'removed' or d.outcome == 'resume', 'delivery ' .. i .. ': outcome must be done, failed, cancelled, removed or resume')
  need(#d.text <= 536870912, 'delivery ' .. i .. ': result or error text over 536870912 bytes')
  D[i] = d
end
need_row(KEYS[7], KEYS[6], D[1].pid)

-- Reads: every parent row is a hash (or absent), and, when any delivery would write, every key
-- a write may touch is of its type.
local writes = false
for i = 1, #D do
  local row = KEYS[6] .. D[i].pid
  local cur = checked(redis.pcall('HMGET', row, 'status', 'k:' .. D[i].cid, 'r:' .. D[i].cid), row)
  if cur[1] and cur[2] and (not cur[3] or D[i].outcome == 'resume') then writes = true end
end
if writes then
  need_types({ KEYS[2], 'list', KEYS[3], 'list', KEYS[4], 'zset', KEYS[5], 'hash', KEYS[9], 'hash', KEYS[10], 'zset' })
  if elog > 0 then need_type(KEYS[8], 'stream') end
end

local now = writes and now_ms() or 0
local released, buried, boxed = {}, {}, 0
local function box(id, entry)
  hand_off(KEYS[9], KEYS[10], id, entry, now)
  boxed = boxed + 1
end
-- The waiting parent becomes `pending` (once: the caller saw it `waiting`).
local function release(row, pid)
  redis.call('HSET', row, 'status', 'pending')
  redis.call('HINCRBY', KEYS[1], 'waits', -1) -- meta `waits`: one waiting job fewer (flow-add.lua)
  if redis.call('LPUSH', KEYS[2], pid) == 1 and lanes then redis.call('LPUSH', b .. 'groups', '') end
  if redis.call('LLEN', KEYS[3]) == 0 then redis.call('LPUSH', KEYS[3], '1') end
  released[#released + 1] = pid
  return 2
end
-- Outcome `removed` (removeChildDependency): the parent stops waiting for the child: its
-- `k:<child>` and the child's creation entry go, `deps` drops while it waits (0 releases it).
-- The child itself is untouched; its own outcome, if it ever comes, answers -1.
local function detach(row, pid, cid, status)
  redis.call('HDEL', row, 'k:' .. cid)
  redis.call('HDEL', KEYS[9], 'c:' .. cid)
  redis.call('ZREM', KEYS[10], 'c:' .. cid)
  if status ~= 'waiting' then return 1 end
  if redis.call('HINCRBY', row, 'deps', -1) > 0 then return 1 end
  return release(row, pid)
end
-- Outcome `resume` (retrying a flow's failed child): the parent, buried by this child's failure
-- (`dead`, error "child <child> …", the child's outcome `failed` or `cancelled`), a root (no
-- parent of its own) whose other children all ended `done`, waits again for this child alone:
-- out of the morgue, `waiting`, `deps` 1, the child's outcome and the error removed. Answers 4;
-- -2 when it was buried by this child but cannot resume (a sibling did not end done, or it has a
-- parent); -1 otherwise (not buried by this child).
local function resume(row, pid, cid)
  local cur = redis.call('HMGET', row, 'status', 'error', 'parent', 'r:' .. cid)
  local why = 'child ' .. cid .. ' '
  if cur[1] ~= 'dead' or not cur[2] or string.sub(cur[2], 1, #why) ~= why or not cur[4] or string.match(cur[4], '^done ') then return -1 end
  if cur[3] then return -2 end
  local all = redis.call('HGETALL', row)
  local done = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r:' and string.match(all[i + 1], '^done ') then done[string.sub(all[i], 3)] = true end
  end
  for i = 1, #all, 2 do
    local k = string.sub(all[i], 3)
    if string.sub(all[i], 1, 2) == 'k:' and k ~= cid and not done[k] then return -2 end
  end
  redis.call('ZREM', KEYS[4], pid)
  redis.call('HDEL', row, 'r:' .. cid, 'error', 'finished')
  redis.call('HSET', row, 'status', 'waiting', 'deps', 1)
  redis.call('HINCRBY', KEYS[1], 'waits', 1)
  return 4
end
-- One delivery, in order (a later one sees what an earlier one of this call wrote).
local function deliver(d)
  local pid, cid, outcome, text = d.pid, d.cid, d.outcome, d.text
  local row = KEYS[6] .. pid
  local cur = redis.call('HMGET', row, 'status', 'deps', 'parent', 'k:' .. cid, 'r:' .. cid)
  if not cur[1] or not cur[4] then return -1 end
  if outcome == 'resume' then return resume(row, pid, cid) end
  if cur[5] then return 0 end
  if outcome == 'removed' then return detach(row, pid, cid, cur[1]) end
  local pol = string.match(cur[4], '^[^ ]+ ([a-z]+) ')
  local fails = outcome ~= 'done' and pol == 'fail'
  -- `release`: a failed or cancelled child releases its waiting parent at once, siblings still out.
  local early = outcome ~= 'done' and pol == 'release'
  redis.call('HSET', row, 'r:' .. cid, outcome .. ' ' .. text)
  -- An outcome proves the child was created: its creation entry, if still in this outbox (the
  -- relay that created the child died before acknowledging), is dropped, so that no late replay
  -- creates the child again after it finished and left (keepDone 0).
  redis.call('HDEL', KEYS[9], 'c:' .. cid)
  redis.call('ZREM', KEYS[10], 'c:' .. cid)
  if cur[1] ~= 'waiting' then return 1 end
  if not fails then
    local left = redis.call('HINCRBY', row, 'deps', -1)
    if left > 0 and not early then return 1 end
    return release(row, pid)
  end
  -- Fail the parent: bury it, cancel the siblings still out, report to its own parent.
  local err = 'child ' .. cid .. ' ' .. outcome .. ': ' .. text
  bury(row, KEYS[4], pid, err, now)
  redis.call('HINCRBY', KEYS[1], 'waits', -1)
  each_child_out(row, function(sid, queue) box('x:' .. sid, 'x ' .. queue .. ' ' .. sid) end)
  if cur[3] then box('d:' .. pid, delivery_text(cur[3], pid, 'failed', err)) end
  trim_morgue(KEYS[4], KEYS[5], KEYS[6], cap, meta.refs == '1')
  buried[#buried + 1] = pid
  return 3
end
local out = {}
for i = 1, #D do out[i] = deliver(D[i]) end
if boxed > 0 then redis.call('SPUBLISH', KEYS[9], boxed) end
emit(KEYS[8], elog, 'released', released)
emit(KEYS[8], elog, 'buried', buried)
if #D == 1 then return out[1] end
return out
end
return run(main)
