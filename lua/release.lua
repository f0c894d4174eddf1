#!lua flags=allow-oom
-- release.lua: EchoMQ protocol v2. Built from lua/src/release.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Hands active jobs back unstarted or unfinished, each fenced by its token: the job returns to the
-- front of `pending` at once (instead of waiting for its lease to expire) and the attempt its
-- claim counted is given back. Used for prefetched jobs a consumer never started and for handlers
-- abandoned at shutdown. A job flagged by cancel while active (`cancel` = 1) ends `cancelled`
-- instead (attempt given back too; kept in the cancelled set, trimmed to meta `keepc`, default
-- 1000).
--
-- A row with `prio` (a job of priority level p, docs/protocol.md §5) goes back to `<pending>:<p>`
-- (derived from the pending key, same slot) and p to `emq:{q}:levels`; in lanes mode a row with
-- `group` g goes back to `emq:{q}:group:<g>` (a lane that was empty joins the ring `groups`).
-- A job that ends cancelled and names a parent writes its hand-off `d:<id>` = "d <queue> <parent
-- id> <id> cancelled cancelled" to this queue's outbox (docs/flows.md).
-- Flags: allow-oom. It frees leases (active entries) and trims the cancelled set; it adds only a
-- bounded outbox entry per flagged flow child: refusing it under OOM would strand jobs in active
-- until their leases expire.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key pending emq:{q}:pending list of pending ids
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key rows emq:{q}:job: prefix of job rows
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at (for jobs flagged by cancel)
-- @key data emq:{q}:data hash id -> payload (for jobs trimmed out of the cancelled set)
-- @key row* emq:{q}:job:<id> the row of job i, KEYS[8+i] for i = 1..n
-- @key outbox? emq:{q}:outbox KEYS[9+n], with outdue; required when a flagged row names a parent
-- @key outdue? emq:{q}:outdue KEYS[10+n], with outbox; required when a flagged row names a parent
-- @arg version version the protocol version
-- @arg n 1..1000 the number of jobs
-- @arg id* id:job per job i, ARGV[3+2(i-1)]: its id
-- @arg token* token per job i, ARGV[4+2(i-1)]: its fencing token (decimal digits)
-- @returns an array of n integers: 1 = released, 2 = cancelled (it was flagged), 0 = refused
--   (stale token, not active, or the earlier copy of an id given twice).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], a key that is not the row of its id, a
--   flagged row naming a parent without the outbox keys), EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE,
--   EMQ_WRONGTYPE. Every check comes before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta events cancelled lanes-back flow-child
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
-- A fencing token: decimal digits, at most 20.
local function need_token(s)
  if type(s) ~= 'string' or #s > 20 or not string.match(s, '^%d+$') then fail('BAD_ARG', 'bad token') end
  return s
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
-- The cancelled set (docs/protocol.md §5): a job that ends `cancelled` keeps its row and its id in
-- `cancelled` (id -> cancelled at), trimmed to the retention cancel.lua records in meta `keepc`.
-- The retention of meta `keepc`, 1000 when unset or malformed.
local function cancelled_keep(keepc)
  return int(keepc, 1, 1000000) or 1000
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
-- Putting an active job back in line, first (the pop end), docs/protocol.md §5 (Priorities, Fair
-- lanes). Without lanes (meta `lanes` unset) it goes back to `pending`. In lanes mode a job of
-- group g goes to `group:<g>`, one of priority level p to `<pending>:<p>` (and p to `levels`),
-- another to `pending`; a lane list that was empty joins the ring `groups`.
-- The types of the lanes a row (`prio` p, `group` g) may go back to, checked before any write.
local function need_lane_types(base, pending, p, g)
  need_types({ pending .. ':' .. (p or 0), 'list', base .. 'levels', 'zset', base .. 'groups', 'list', base .. 'group:' .. (g or '-'), 'list' })
end
local function back_in_line(lanes, base, pending, id, p, g)
  if lanes ~= '1' then
    redis.call('RPUSH', pending, id)
  elseif g then
    if redis.call('RPUSH', base .. 'group:' .. g, id) == 1 then redis.call('LPUSH', base .. 'groups', g) end
  elseif p then
    redis.call('RPUSH', pending .. ':' .. p, id)
    redis.call('ZADD', base .. 'levels', p, p)
  elseif redis.call('RPUSH', pending, id) == 1 then
    redis.call('LPUSH', base .. 'groups', '')
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
need(#KEYS >= 9 and #ARGV >= 4, 'expected at least 9 keys and 4 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'active', 'pending', 'wake', 'job:', 'events', 'cancelled', 'data' })
local m = queue_meta(KEYS[1])
local n = need_int(ARGV[2], 1, 1000000000, 'the job count')
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 jobs per call') end
need((#KEYS == 8 + n or #KEYS == 10 + n) and #ARGV == 2 + 2 * n, 'expected ' .. n .. ' rows and ' .. (2 * n) .. ' job arguments')
local active, pending, prefix, events, cancelled = KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[7]
for i = 1, n do
  local id = ARGV[3 + 2 * (i - 1)]
  if bad_id(id) then fail('BAD_ID', 'job ' .. i .. ' has a malformed id') end
  need_row(KEYS[8 + i], prefix, id)
  need_token(ARGV[4 + 2 * (i - 1)])
end
-- Every row is read before the first write, so a row of the wrong type refuses the whole call.
local rows, anyParent = {}, false
for i = 1, n do
  local cur = checked(redis.pcall('HMGET', KEYS[8 + i], 'status', 'token', 'cancel', 'parent', 'prio', 'group'), KEYS[8 + i])
  rows[i] = cur
  if m.lanes == '1' and cur[1] == 'active' then need_lane_types(b, pending, cur[5], cur[6]) end
  if cur[3] == '1' and cur[4] then anyParent = true end
end
local box, due = outbox_keys(KEYS, 9 + n, b)
if anyParent then need_outbox(box, due, 'a flagged row names a parent') end
need_types({ active, 'zset', pending, 'list', KEYS[4], 'list', cancelled, 'zset', KEYS[8], 'hash' })
if m.elog > 0 then need_type(events, 'stream') end

local now = now_ms()
local out, ids, cancelledIds, seen, handed = {}, {}, {}, {}, 0
-- Walk backwards so the first job given ends up first in line. An id given twice is handed
-- back once (the rows were read before the walk): its earlier copy answers 0.
for i = n, 1, -1 do
  local id, token = ARGV[3 + 2 * (i - 1)], ARGV[4 + 2 * (i - 1)]
  local row, cur = KEYS[8 + i], rows[i]
  if cur[1] == 'active' and cur[2] == token and not seen[id] then
    seen[id] = true
    redis.call('ZREM', active, id)
    redis.call('HINCRBY', row, 'attempts', -1)
    if cur[3] == '1' then
      end_cancelled(row, cancelled, id, now)
      cancelledIds[#cancelledIds + 1] = id
      out[i] = 2
      if cur[4] then -- a flow child hands its cancel to the parent's queue
        tell_parent(box, due, cur[4], id, 'cancelled', 'cancelled')
        handed = handed + 1
      end
    else
      redis.call('HSET', row, 'status', 'pending')
      back_in_line(m.lanes, b, pending, id, cur[5], cur[6])
      ids[#ids + 1] = id
      out[i] = 1
    end
  else
    out[i] = 0
  end
end
if #ids > 0 and redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
if #cancelledIds > 0 then trim_cancelled(cancelled, KEYS[8], prefix, cancelled_keep(m.keepc), m.refs == '1') end
if handed > 0 then redis.call('SPUBLISH', box, handed) end
emit(events, m.elog, 'released', ids)
emit(events, m.elog, 'cancelled', cancelledIds)
return out
end
return run(main)
