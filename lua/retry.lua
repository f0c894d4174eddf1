#!lua flags=allow-oom
-- retry.lua: EchoMQ protocol v2. Built from lua/src/retry.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Retry-or-bury for one active job, fenced by its token. The job is scheduled again after its
-- backoff (computed here, on the server clock), or moved to the morgue (`dead`) when it has used
-- its last attempt or the error is fatal. The morgue is capped: its oldest rows beyond the cap are
-- deleted. A job flagged by cancel while active (`cancel` = 1) ends `cancelled` instead (kept in
-- the cancelled set, trimmed to meta `keepc`, default 1000). A buried or cancelled job whose row
-- names a parent (a flow child) writes its hand-off `d:<id>` = "d <queue> <parent id> <id>
-- <failed|cancelled> <error>" to this queue's outbox (docs/flows.md).
-- Flags: allow-oom. It moves work forward and frees memory (ZREM from active, morgue and
-- cancelled trims); what it adds is bounded (one error text, one outbox entry), so refusing it
-- under OOM would only strand an active job.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key dead emq:{q}:dead zset id -> buried at (the morgue)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key data emq:{q}:data hash id -> payload (for jobs trimmed out of the morgue)
-- @key rows emq:{q}:job: prefix of job rows (for rows trimmed out of the morgue)
-- @key row emq:{q}:job:<id> the job's row
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at (for a job flagged by cancel)
-- @key outbox? emq:{q}:outbox with outdue; required when the row names a parent
-- @key outdue? emq:{q}:outdue with outbox; required when the row names a parent
-- @arg version version the protocol version
-- @arg id id:job the job
-- @arg token token the fencing token (decimal digits)
-- @arg error bytes:0..65536 the error text (at most 65536 bytes)
-- @arg fatal 0|1 "1" when the error is fatal (straight to the morgue), else "0"
-- @arg max-attempts 1..1000 default max attempts, used when the row has none
-- @arg backoff backoff default backoff ("f:<ms>" or "e:<ms>", ms 0..86400000), used when the
--   row has none
-- @arg morgue-cap 1..1000000 the morgue cap
-- @arg worker? bytes:0..128 (optional, protocol v2 additive) who ran the attempt (TypeScript:
--   `<host name>:<pid>`), no control characters; "" or absent: unknown
-- @arg stack? bytes:0..2048 (optional, after worker) the error's stack text; "" or absent: none
-- Every call that ends the attempt (scheduled again, buried or cancelled) appends its record to
-- the row's attempt history `hist` (attempts.lua: outcome `failed`, the row's `started`, now, the
-- worker, the error cut to 1024 bytes, the stack); a refused call (stale token) writes nothing.
-- @returns { 0 } refused (stale token or not active); { 1, runAt } scheduled again; { 2, buriedAt }
--   moved to the morgue; { 3, cancelledAt } cancelled (it was flagged).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[8] not the row of the id, a row
--   naming a parent without the outbox keys), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes
--   before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta events cancelled morgue flow-child attempts
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
-- A text argument of lo..hi bytes.
local function need_bytes(s, lo, hi, what)
  if type(s) ~= 'string' or #s < lo or #s > hi then fail('BAD_ARG', what .. ' must be ' .. lo .. '..' .. hi .. ' bytes') end
  return s
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
-- A fencing token: decimal digits, at most 20.
local function need_token(s)
  if type(s) ~= 'string' or #s > 20 or not string.match(s, '^%d+$') then fail('BAD_ARG', 'bad token') end
  return s
end
-- A job's attempt history: the row's `hist` (docs/protocol.md §3, "Attempt history"), the ended
-- attempts that did not complete, oldest first, the newest HIST_KEEP kept. A record is
-- `<n>:<body>` (n = the body's bytes, decimal), its body seven fields, each `<n>:<bytes>`:
-- attempt, started (epoch ms, "" unknown), ended (epoch ms), outcome, worker, error, stack.
-- Written only on the failure paths (retry, reap): the happy path never reads or writes it.
local HIST_KEEP, HIST_ERROR, HIST_WORKER, HIST_STACK = 10, 1024, 128, 2048
-- A text cut to at most n bytes, never inside a UTF-8 sequence (a cut continuation run goes).
local function utf8_cut(s, n)
  if #s <= n then return s end
  local p, stop = n + 1, math.max(1, n - 2)
  while p > stop do
    local c = string.byte(s, p)
    if c < 0x80 or c >= 0xC0 then break end
    p = p - 1
  end
  return string.sub(s, 1, p - 1)
end
-- The optional worker and stack arguments of retry: the worker 0..HIST_WORKER bytes with no
-- control character, the stack 0..HIST_STACK bytes (any bytes: it is length-prefixed).
local function need_attempt_args(worker, stack)
  if worker ~= nil and (#worker > HIST_WORKER or string.find(worker, '%c')) then
    fail('BAD_ARG', 'the worker must be 0..' .. HIST_WORKER .. ' bytes without control characters')
  end
  if stack ~= nil and #stack > HIST_STACK then fail('BAD_ARG', 'the stack must be 0..' .. HIST_STACK .. ' bytes') end
end
-- The start of each record of a history text, or nil when it is not a sequence of records.
local function hist_starts(h)
  local starts, pos = {}, 1
  while pos <= #h do
    local len = string.match(h, '^(%d%d?%d?%d?%d?%d?):', pos)
    if not len then return nil end
    starts[#starts + 1] = pos
    pos = pos + #len + 1 + tonumber(len)
    if pos > #h + 1 then return nil end
  end
  return starts
end
local function hist_field(s) return #s .. ':' .. s end
-- The row's history with one more record (the oldest beyond HIST_KEEP dropped). A history that
-- is not a sequence of records (written by hand) starts over: the record is never lost to it.
local function hist_push(h, attempt, started, ended, outcome, worker, err, stack)
  local st = started and string.match(started, '^%d+$') or '' -- a planted start is not copied
  local body = hist_field(tostring(attempt)) .. hist_field(st) .. hist_field(tostring(ended))
    .. hist_field(outcome) .. hist_field(worker or '') .. hist_field(utf8_cut(err or '', HIST_ERROR))
    .. hist_field(stack or '')
  local rec = #body .. ':' .. body
  local starts = h and hist_starts(h)
  if not starts then return rec end
  if #starts < HIST_KEEP then return h .. rec end
  return string.sub(h, starts[#starts - HIST_KEEP + 2]) .. rec
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
need((#KEYS == 10 or #KEYS == 12) and #ARGV >= 8 and #ARGV <= 10, 'expected 10 (or 12) keys and 8 to 10 arguments')
local b, id, token, err, fatal = queue_base(KEYS[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5]
need_keys(KEYS, b, { 'meta', 'active', 'scheduled', 'dead', 'wake', 'data', 'job:', 'job:' .. id, 'events', 'cancelled' })
local box, due = outbox_keys(KEYS, 11, b)
local m = queue_meta(KEYS[1])
need_id(id)
need_token(token)
need_bytes(err, 0, 65536, 'the error text')
need_word(fatal, { ['0'] = true, ['1'] = true }, 'the fatal flag')
local defMax, defBackoff = need_int(ARGV[6], 1, 1000, 'default max attempts'), ARGV[7]
local _, defBase = string.match(defBackoff, '^([fe]):(%d+)$')
need(int(defBase, 0, 86400000), 'default backoff must be f:<ms> or e:<ms>, ms 0..86400000')
local cap = need_int(ARGV[8], 1, 1000000, 'the morgue cap')
local worker, stack = ARGV[9], ARGV[10]
need_attempt_args(worker, stack)

local row, cancelled = KEYS[8], KEYS[10]
local cur = checked(redis.pcall('HMGET', row, 'status', 'token', 'attempts', 'max', 'backoff', 'cancel', 'parent', 'started', 'hist'), row)
if cur[1] ~= 'active' or cur[2] ~= token then return { 0 } end
local att = tonumber(cur[3]) or 1
local max = tonumber(cur[4]) or defMax
local outcome = 1
if cur[6] == '1' then outcome = 3 elseif fatal == '1' or att >= max then outcome = 2 end
need_types({ KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'list', KEYS[6], 'hash', cancelled, 'zset' })
if m.elog > 0 then need_type(KEYS[9], 'stream') end
local parent = outcome ~= 1 and cur[7]
if parent then need_outbox(box, due, 'the row names a parent') end
local now = now_ms()
redis.call('ZREM', KEYS[2], id)
local hist = hist_push(cur[9], att, cur[8], now, 'failed', worker, err, stack)
if parent then
  tell_parent(box, due, parent, id, outcome == 3 and 'cancelled' or 'failed', err)
  redis.call('SPUBLISH', box, 1)
end
if outcome == 3 then
  end_cancelled(row, cancelled, id, now, err, hist)
  trim_cancelled(cancelled, KEYS[6], KEYS[7], cancelled_keep(m.keepc), m.refs == '1')
  emit(KEYS[9], m.elog, 'cancelled', { id })
  return { 3, now }
end
if outcome == 2 then
  bury(row, KEYS[4], id, err, now, hist)
  trim_morgue(KEYS[4], KEYS[6], KEYS[7], cap, m.refs == '1')
  emit(KEYS[9], m.elog, 'buried', { id })
  return { 2, now }
end
local kind, base = string.match(cur[5] or defBackoff, '^([fe]):(%d+)$')
local delay = tonumber(base) or 0
if kind == 'e' then delay = delay * math.pow(2, att - 1) end
if delay > 86400000 then delay = 86400000 end -- never back off more than a day
local runAt = now + math.floor(delay)
redis.call('HSET', row, 'status', 'scheduled', 'error', err, 'hist', hist)
redis.call('ZADD', KEYS[3], runAt, id)
if redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
emit(KEYS[9], m.elog, 'retried', { id })
return { 1, runAt }
end
return run(main)
