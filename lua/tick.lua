-- tick.lua: EchoMQ protocol v2. Built from lua/src/tick.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Turns one due tick of a schedule into (at most) one job, and advances the schedule's next
-- tick, in one atomic step. Compare-and-set: the call names the tick it computed from (`due`)
-- and the SHA1 of the spec text it read; when the stored next tick or spec differ (another
-- instance ticked first, the schedule was replaced or removed) the call is refused with nothing
-- written. So any number of instances may race on one tick and exactly one wins. The job is left
-- exactly as enqueue.lua leaves a job (the shared fragment job-write): its payload (the spec's
-- `payload` text) in `data`, its own options in `opts`, its id in `pending` (or in `scheduled` at
-- its run-at when that is in the future), one wake marker when `wake` is empty, and the
-- `enqueued` / `scheduled` lifecycle event; claim.lua takes it from there unchanged. The spec's
-- `attempts` (1..1000) and `backoff` (`f:<ms>` / `e:<ms>`, ms 0..86400000), when present, become
-- the job's own options as in enqueue.lua.
--
-- A spec's `limit` (1..1000000000), `start` and `end` (epoch ms, 0..7258118400000), when present,
-- are enforced here on a tick that would write a job: a tick before `start` advances without a
-- job; a tick after `end`, or once the schedule's ticks wrote `limit` jobs (counted in `fires`,
-- KEYS[10], required then), writes no job and ends the schedule (its name leaves `ticks`); the
-- job that reaches the limit ends it too, and so does a `next` after `end`.
--
-- No script flags: a tick writes a new job (memory grows), so under OOM it is refused at its
-- first write, as an enqueue is.
--
-- @key meta emq:{q}:meta queue meta hash (as enqueue.lua)
-- @key pending emq:{q}:pending list of pending ids (as enqueue.lua)
-- @key scheduled emq:{q}:scheduled zset id -> run-at (as enqueue.lua)
-- @key wake emq:{q}:wake list that idle consumers block on (as enqueue.lua)
-- @key data emq:{q}:data hash id -> payload (as enqueue.lua)
-- @key opts emq:{q}:opts hash id -> "<max attempts>|<backoff>" (as enqueue.lua)
-- @key events emq:{q}:events lifecycle events (as enqueue.lua)
-- @key schedules emq:{q}:schedules hash name -> spec text
-- @key ticks emq:{q}:ticks zset name -> next tick (epoch ms)
-- @key fires? emq:{q}:fires hash name -> jobs the schedule's ticks wrote; required when the
--   stored spec has a `limit`
-- @arg version version the protocol version
-- @arg name bytes:1..100 the schedule name (1..100 bytes of [A-Za-z0-9_.-])
-- @arg sha sha1 SHA1 (40 lowercase hex digits) of the spec text the caller computed from
-- @arg due 0..7258118400000 the next tick the caller read
-- @arg next 0..7258118400000 the next tick after this call (due+1..7258118400000), or 0: the
--   schedule has no more ticks (its name leaves `ticks`, its spec stays)
-- @arg write 0|1 "1": write a job for this tick; "0": advance without a job (a missed tick skipped)
-- @arg id id:job the job id (a 14-byte `job` id; "" when write is "0")
-- @arg run-at 0..7258118400000 the job's run-at (epoch ms on the server clock; 0 or a past
--   instant = pending now); "0" when write is "0"
-- @returns 1 job written and tick advanced; 2 advanced without a job; 0 refused (stale: the
--   stored tick or spec is not the caller's, or no such schedule); -1 the job id is taken
--   (nothing written: mint another).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments or keys, a stored spec that
--   is not a JSON object with a string payload and valid options, a spec with a `limit` and no
--   `fires` key), EMQ_BAD_ID, EMQ_WRONGTYPE.
--   Every check comes before the first write.
-- @uses keys ids types meta names job-args job-write
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
-- A decimal integer in [lo, hi], or nil: an optional `-`, at most 16 digits; refuses NaN, inf,
-- fractions, exponents, `+`, hex and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- A backoff: `f:<ms>` fixed or `e:<ms>` exponential, ms 0..86400000.
local function good_backoff(s)
  return int(string.match(s, '^[fe]:(%d+)$'), 0, 86400000) ~= nil
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
-- Writing new jobs (docs/protocol.md §3): enqueue.lua does it, and tick.lua writes its job exactly
-- the same way, with the same keys K = enqueue's KEYS[1..7] (meta, pending, scheduled, wake, data,
-- opts, events). A new job is its payload in `data`, its own options in `opts` (only when it has
-- any), its id in `pending` (ready now) or in `scheduled` at its run-at; one wake marker when
-- `wake` was empty, and the `enqueued` / `scheduled` lifecycle events. The row is made later, by
-- the job's first claim.
--
-- The checks before the first write, of the keys written after it: `wake` (answers its length;
-- 1, meaning no marker, when not read), `opts` when options are written, `scheduled` when it is
-- written after a push onto `pending`, and the events stream when the queue logs events.
local function check_new_jobs(K, elog, wake, opts, sched)
  local wakeLen = 1
  if wake then wakeLen = checked(redis.pcall('LLEN', K[4]), K[4]) end
  if opts then checked(redis.pcall('HLEN', K[6]), K[6]) end
  if sched then checked(redis.pcall('ZCARD', K[3]), K[3]) end
  if elog > 0 then need_type(K[7], 'stream') end
  return wakeLen
end
-- The first write is the type check of its own key (a write refused with WRONGTYPE changes
-- nothing): the ready ids onto `pending` (answers its new length, or nil when none), then the
-- run-at / id pairs into `scheduled`.
local function push_new_jobs(K, ready, zargs)
  local len = nil
  if #ready > 0 then len = checked(redis.pcall('LPUSH', K[2], unpack(ready)), K[2]) end
  if #zargs > 0 then checked(redis.pcall('ZADD', K[3], unpack(zargs)), K[3]) end
  return len
end
-- Payloads (id, payload, …) and own options (id, "<max>|<backoff>[|…]", …).
local function store_new_jobs(K, data, opts)
  redis.call('HSET', K[5], unpack(data))
  if #opts > 0 then redis.call('HSET', K[6], unpack(opts)) end
end
-- After the writes: the wake marker and the lifecycle events of the ids added.
local function announce_new_jobs(K, elog, wakeLen, queued, scheduled)
  if wakeLen == 0 then redis.call('LPUSH', K[4], '1') end
  emit(K[7], elog, 'enqueued', queued)
  emit(K[7], elog, 'scheduled', scheduled)
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
-- A name of the key grammar (docs/protocol.md §2): a queue, a lane group, a schedule, a flow
-- child's key: 1..100 bytes of `A-Za-z0-9_.-`. True when s is not one.
local function bad_name(s)
  return type(s) ~= 'string' or #s == 0 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
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
need((#KEYS == 9 or #KEYS == 10) and #ARGV == 8, 'expected 9 (or 10) keys and 8 arguments')
local names = { 'meta', 'pending', 'scheduled', 'wake', 'data', 'opts', 'events', 'schedules', 'ticks' }
if #KEYS == 10 then names[10] = 'fires' end
need_keys(KEYS, queue_base(KEYS[1]), names)
local name, sha = ARGV[2], ARGV[3]
need(not bad_name(name), 'a schedule name is 1..100 bytes of letters, digits, _ . -')
need(#sha == 40 and string.match(sha, '^[0-9a-f]+$'), 'the spec SHA1 must be 40 lowercase hex digits')
local due, next = int(ARGV[4], 0, 7258118400000), int(ARGV[5], 0, 7258118400000)
need(due and next and (next == 0 or next > due), 'due must be 0..7258118400000 and next 0 or due+1..7258118400000')
local write, id, runAt = ARGV[6], ARGV[7], int(ARGV[8], 0, 7258118400000)
need(write == '0' or write == '1', 'the write flag must be 0 or 1')
need(runAt, 'run-at must be 0..7258118400000')
need(write == '1' or (id == '' and runAt == 0), 'a tick without a job takes no id and run-at 0')
if write == '1' then need_id(id) end

-- Reads first: every key this call writes is read (or type-checked) before anything is written.
local meta = queue_meta(KEYS[1])
local spec = checked(redis.pcall('HGET', KEYS[8], name), KEYS[8])
local tick = checked(redis.pcall('ZSCORE', KEYS[9], name), KEYS[9])
if not spec or not tick or tonumber(tick) ~= due or redis.sha1hex(spec) ~= sha then return 0 end
if write == '0' then
  if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
  return 2
end

local ok, s = pcall(cjson.decode, spec)
need(ok and type(s) == 'table' and type(s.payload) == 'string' and #s.payload > 0,
  'the stored spec of ' .. name .. ' is not a JSON object with a non-empty string payload')
local maxA, backoff = s.attempts, s.backoff
need(maxA == nil or (type(maxA) == 'number' and maxA == math.floor(maxA) and maxA >= 1 and maxA <= 1000),
  'the stored spec of ' .. name .. ' has bad attempts (1..1000)')
need(backoff == nil or (type(backoff) == 'string' and good_backoff(backoff)),
  'the stored spec of ' .. name .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
-- The window and the limit (docs/protocol.md §11).
local lim, st, en = s.limit, s.start, s['end']
local function whole(v, hi) return v == nil or (type(v) == 'number' and v == math.floor(v) and v >= 0 and v <= hi) end
need(whole(lim, 1000000000) and lim ~= 0 and whole(st, 7258118400000) and whole(en, 7258118400000),
  'the stored spec of ' .. name .. ' has a bad limit (1..1000000000), start or end (0..7258118400000)')
local fires, count = KEYS[10], 0
if lim then
  need(fires, 'the stored spec of ' .. name .. ' has a limit: the call needs the fires key (KEYS[10])')
  count = tonumber(checked(redis.pcall('HGET', fires, name), fires)) or 0
end
if (en and due > en) or (lim and count >= lim) then
  redis.call('ZREM', KEYS[9], name)
  return 2
end
if st and due < st then
  if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
  return 2
end
if (en and next > en) or (lim and count + 1 >= lim) then next = 0 end
if checked(redis.pcall('HEXISTS', KEYS[5], id), KEYS[5]) == 1 then return -1 end
local later = runAt > now_ms()
local own = maxA ~= nil or backoff ~= nil
local wakeLen = check_new_jobs(KEYS, meta.elog, true, own, false)
local queued, scheduled = later and {} or { id }, later and { id } or {}
push_new_jobs(KEYS, queued, later and { runAt, id } or {})
store_new_jobs(KEYS, { id, s.payload }, own and { id, (maxA and string.format('%d', maxA) or '') .. '|' .. (backoff or '') } or {})
stamp_version(KEYS[1], meta.v)
if lim then redis.call('HINCRBY', fires, name, 1) end
if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
announce_new_jobs(KEYS, meta.elog, wakeLen, queued, scheduled)
return 1
end
return run(main)
