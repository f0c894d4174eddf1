#!lua flags=allow-oom
-- complete.lua: EchoMQ protocol v2. Built from lua/src/complete.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Completes one or many active jobs, each fenced by the token its claim minted: a holder whose
-- lease expired (the job was reaped or re-claimed) is refused and changes nothing. A completed
-- job is kept in the bounded `done` set, or deleted (row and data) at once when the retention is
-- 0. The done set is then trimmed towards the retention, oldest first, in steps: a call trims
-- only once the set holds more than retention + slack (slack = floor(retention / 10)), and then
-- back to the retention, at most (the jobs this call added to it) + 100 + slack rows per call;
-- so a steady stream pays the trim's commands once per ~slack completions instead of on every
-- call, and lowering the retention (even to 0) drains older rows over the next completions at a
-- bounded cost.
-- A completed job whose row names a parent (`parent` = "<queue> <id>", a flow child) writes its
-- hand-off `d:<id>` = "d <queue> <parent id> <id> done <result>" to this queue's outbox in the
-- same step (docs/flows.md); the outbox keys are then required.
-- Group caps: once meta `gcap` is set (by a claim given a group policy with a cap), a call that
-- completes a job whose row has a `group` pushes a marker on `emq:{q}:wake` (derived from
-- KEYS[1], same slot) when it is empty: its group may be claimable again, without polling.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: allow-oom: it moves work forward and frees memory (a job leaves `active`; done rows are
-- trimmed to the retention): a consumer must be able to finish its jobs at the memory limit.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key done emq:{q}:done zset id -> finished at (ms), the bounded retention of done rows
-- @key data emq:{q}:data hash id -> payload
-- @key rows emq:{q}:job: prefix of job rows (for rows trimmed out of the retention)
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key row* emq:{q}:job:<id> the row of job i, for i = 1..n (KEYS[6+i])
-- @key outbox? emq:{q}:outbox (KEYS[7+n], with outdue; required when a job names a parent)
-- @key outdue? emq:{q}:outdue (KEYS[8+n]) the outbox's due times
-- @arg version version the protocol version
-- @arg retention 0..1000000 how many done rows to keep
-- @arg n 1..1000 the number of jobs (a larger decimal count is EMQ_BATCH_TOO_LARGE)
-- @arg id* id:job per job i (ARGV[4+3(i-1)]): its id
-- @arg token* token per job i (ARGV[5+3(i-1)]): the fencing token of its claim (decimal digits)
-- @arg result* json per job i (ARGV[6+3(i-1)]): its result (JSON text, "" for none)
-- @arg self-lease? 1..86400000 (ARGV[4+3n], only with the outbox keys) a self-relay lease in ms.
--   The caller relays the hand-offs this call writes itself: they are written already taken
--   (due at now + lease, as outbox-take would leave them), no outbox signal is sent, and the
--   reply carries them. A caller that crashes before acknowledging them leaves them to any live
--   relay once the lease lapses (the repair rule, docs/flows.md).
-- @returns an array of n integers: 1 = completed, 0 = refused (stale token, not active, or the
--   same id earlier in this call). A call that completes nothing writes nothing. With a
--   self-relay lease, the n integers are followed by the hand-offs written, as bulk strings
--   { entry id, entry text, ... } (none when no completed job names a parent).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key
--   that is not the one the key grammar spells for the queue of KEYS[1], a row key that is not
--   the row of its id, a job naming a parent without the outbox keys), EMQ_WRONGTYPE (a key
--   holds another type), EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE. Every check comes before the first write.
-- @flags allow-oom
-- @uses args keys types meta ids events outbox refs
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
need(#KEYS >= 6 and #ARGV >= 3, 'expected at least 6 keys and 3 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'active', 'done', 'data', 'job:', 'events' })
-- Fast path (the valid call): one pattern over both joined by a space, at most 16 digits each,
-- coercion by `+ 0`, the ranges: exactly what int() accepts; a miss falls back to int() per
-- argument for the message (as claim does).
local keep, n
if #ARGV[2] < 17 and #ARGV[3] < 17 and string.find(ARGV[2] .. ' ' .. ARGV[3], '^%d+ %d+$') then keep, n = ARGV[2] + 0, ARGV[3] + 0 end
if not (keep and keep <= 1000000 and n >= 1 and n <= 1000000000) then
  keep, n = int(ARGV[2], 0, 1000000), int(ARGV[3], 1, 1000000000)
  need(keep, 'retention must be 0..1000000')
  need(n, 'bad job count')
end
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 jobs per call') end
if (#KEYS ~= 6 + n and #KEYS ~= 8 + n) or (#ARGV ~= 3 + 3 * n and (#ARGV ~= 4 + 3 * n or #KEYS ~= 8 + n)) then
  fail('BAD_ARG', 'expected ' .. n .. ' rows and ' .. (3 * n) .. ' job arguments (and a self-relay lease only with the outbox keys)')
end
local selfLease = nil
if #ARGV == 4 + 3 * n then selfLease = need_int(ARGV[4 + 3 * n], 1, 86400000, 'self-relay lease (ms)') end
local box, due = outbox_keys(KEYS, 7 + n, b)
for i = 1, n do
  local id = ARGV[4 + 3 * (i - 1)]
  if bad_id(id) then fail('BAD_ID', 'job ' .. i .. ' has a malformed id') end
  if KEYS[6 + i] ~= KEYS[5] .. id then need_row(KEYS[6 + i], KEYS[5], id) end
  if not string.match(ARGV[5 + 3 * (i - 1)], '^%d+$') then fail('BAD_ARG', 'job ' .. i .. ' has a bad token') end
end

-- Reads first: every key this call writes is read (or is the first write) before anything is
-- written, so a key of the wrong type is refused with nothing changed. (A read's reply is
-- checked inline: a refusal costs the call of checked(), a read that succeeds none.)
local meta = queue_meta(KEYS[1])
local elog = meta.elog
-- seen (the ids completed so far, for a batch of two or more) and hand (flow hand-offs) are
-- allocated only when they can be used: each table costs an allocation and GC work.
local out, ids, rows, seen, hand = {}, {}, {}, n > 1 and {}, nil
-- Group caps (meta `gcap`, set by a claim given a cap): completing a job of a group wakes an
-- idle consumer, since its group may be claimable again (docs/protocol.md §5, Group policy).
local gcap, grouped = meta.gcap == '1', false
for i = 1, n do
  local id, token, row = ARGV[4 + 3 * (i - 1)], ARGV[5 + 3 * (i - 1)], KEYS[6 + i]
  local cur = gcap and redis.pcall('HMGET', row, 'status', 'token', 'parent', 'group') or redis.pcall('HMGET', row, 'status', 'token', 'parent')
  if cur.err then checked(cur, row) end
  if (seen and seen[id]) or cur[1] ~= 'active' or cur[2] ~= token then
    out[i] = 0
  else
    if seen then seen[id] = true end
    ids[#ids + 1] = id
    rows[#rows + 1] = i
    out[i] = 1
    if cur[4] then grouped = true end
    -- A flow child: its hand-off to the parent's queue goes through this queue's outbox.
    if cur[3] then
      hand = hand or {}
      hand[#hand + 1] = 'd:' .. id
      hand[#hand + 1] = delivery_text(cur[3], id, 'done', ARGV[6 + 3 * (i - 1)])
    end
  end
end
if #ids == 0 then return out end
if hand then
  need(box, 'a job names a parent: the outbox and outdue keys are required')
  checked(redis.pcall('HLEN', box), box)
  checked(redis.pcall('ZCARD', due), due)
end
local wake, wakeLen = nil, 1
if grouped then
  wake = b .. 'wake'
  wakeLen = checked(redis.pcall('LLEN', wake), wake)
end
local card = redis.pcall('ZCARD', KEYS[3])
if type(card) == 'table' then checked(card, KEYS[3]) end
local added = 0
if keep > 0 then added = #ids end
-- Trim in steps (see the header): the set may run up to `slack` rows beyond the retention, so the
-- ZPOPMIN, DEL and HDEL of a trim (and the data check) run once per ~slack rows, not per call.
local slack = math.floor(keep / 10)
local excess = card + added - keep
if excess <= slack then excess = 0 else excess = math.min(excess, added + 100 + slack) end
if keep == 0 or excess > 0 then checked(redis.pcall('HLEN', KEYS[4]), KEYS[4]) end
if elog > 0 then need_type(KEYS[6], 'stream') end

local now = now_ms()
-- The first write is the type check of `active`: a write refused with WRONGTYPE changes nothing.
local z = redis.pcall('ZREM', KEYS[2], unpack(ids))
if type(z) == 'table' then checked(z, KEYS[2]) end
if keep == 0 then
  local del = {}
  for j = 1, #rows do del[j] = KEYS[6 + rows[j]] end
  redis.call('DEL', unpack(del))
  redis.call('HDEL', KEYS[4], unpack(ids))
  refs_drop(b, ids, meta.refs == '1')
else
  local zdone = {}
  for j = 1, #rows do
    local i = rows[j]
    redis.call('HSET', KEYS[6 + i], 'status', 'done', 'result', ARGV[6 + 3 * (i - 1)], 'finished', now)
    zdone[#zdone + 1] = now
    zdone[#zdone + 1] = ids[j]
  end
  redis.call('ZADD', KEYS[3], unpack(zdone))
end
if excess > 0 then
  local old = redis.call('ZPOPMIN', KEYS[3], excess)
  local oldIds, oldRows = {}, {}
  for i = 1, #old, 2 do
    oldIds[#oldIds + 1] = old[i]
    oldRows[#oldRows + 1] = KEYS[5] .. old[i]
  end
  if #oldIds > 0 then
    redis.call('DEL', unpack(oldRows))
    redis.call('HDEL', KEYS[4], unpack(oldIds))
    refs_drop(b, oldIds, meta.refs == '1')
  end
end
if hand then
  -- Every hand-off in one HSET and one ZADD (hand_off() writes one entry per call).
  local zd = {}
  for j = 1, #hand, 2 do
    zd[#zd + 1] = selfLease and now + selfLease or now
    zd[#zd + 1] = hand[j]
  end
  redis.call('HSET', box, unpack(hand))
  redis.call('ZADD', due, unpack(zd))
  if selfLease then
    for j = 1, #hand do out[n + j] = hand[j] end
  else
    redis.call('SPUBLISH', box, #zd / 2)
  end
end
emit(KEYS[6], elog, 'completed', ids)
if wakeLen == 0 then redis.call('LPUSH', wake, '1') end
return out
end
return run(main)
