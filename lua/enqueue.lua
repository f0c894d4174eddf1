-- enqueue.lua: EchoMQ protocol v2. Built from lua/src/enqueue.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Adds one or many jobs to a queue: each new job's payload joins the queue's data hash and its
-- id joins `pending` (the pending list) or `scheduled` (the scheduled set, at its run-at instant
-- on the server clock). A job whose id already has data is left untouched, so an enqueue with a
-- caller-chosen id is idempotent. The job row is created by its first claim (or by cancel): a
-- waiting job costs one hash field and one set entry. Every number is a decimal integer: no
-- sign, fraction, exponent or blank. The jobs are written by lua/lib/job-write.lua, which
-- tick.lua uses too; the argument checks are lua/lib/enqueue-args.lua, the lanes
-- lua/lib/enqueue-lanes.lua, the lease to a parked consumer lua/lib/enqueue-parked.lua.
--
-- No script flags: an enqueue grows memory without bound, so under OOM it is refused at its
-- first write (a shebang without allow-oom would refuse it at its start instead).
--
-- Per job i, in the full form, six arguments ARGV[5+6(i-1) .. 10+6(i-1)]: id; payload (JSON
--   text, 1..limit bytes); delay ms (0..315360000000, ten 365-day years; 0 = none); run-at
--   epoch ms on the server clock (0..7258118400000, 2200-01-01T00:00:00Z; 0 = none); max
--   attempts (1..1000, "" = the consumer's default); backoff ("" = the consumer's default,
--   "f:<ms>" fixed or "e:<ms>" exponential, ms 0..86400000). A non-zero delay wins over the
--   run-at. A job whose instant (now + delay, or run-at) is not in the future goes straight to
--   pending.
-- Parked consumers (docs/protocol.md §5): a call of one plain job in the compact form, ready
--   now, onto a queue with nothing pending, no lanes, no pause and no stored rate limit or group
--   policy (meta `rate`, `gpol`: claim enforces those), whose id has no row, leases
--   it to the current registration of emq:{q}:parked with the latest end (the one renewed last:
--   a consumer that died parked renews nothing, so it comes last): `active` (emq:{q}:active)
--   gets the anchor and the id at now + the registration's lease, meta `token` + 1, the row
--   (emq:{q}:job:<id>) status/token/attempts 1; the registration is removed and
--   "<id> <token> <payload>" RPUSHed to emq:{q}:inbox:<tag> (PX the lease). These keys are
--   spelt from the base of KEYS[1] (same slot). Nothing goes to pending or wake; the `claimed`
--   event follows `enqueued`. Anything unusual takes the plain path.
--
-- @key meta emq:{q}:meta queue meta hash (protocol version `v`, `elog`, `lanes`, `xtra`, `rate`, `gpol`)
-- @key pending emq:{q}:pending list of pending ids (enqueue LPUSH, claim RPOP: FIFO)
-- @key scheduled emq:{q}:scheduled zset id -> run-at (ms)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key data emq:{q}:data hash id -> payload (JSON text)
-- @key opts emq:{q}:opts hash id -> "<max attempts>|<backoff>" for jobs with their own options
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key dedup* emq:{q}:key:<key> (dedup mode: all or none) the dedup key of job i (key: 1..256
--   bytes, no control characters)
-- @key refs? emq:{q}:refs (refs mode) the queue's business ids, last of the keys
-- @arg version version the protocol version
-- @arg limit 1..536870912 largest payload in bytes
-- @arg n 1..1000 the number of jobs (more is EMQ_BATCH_TOO_LARGE)
-- @arg elog ""|0..1000000 the queue's lifecycle-log length to record in meta `elog` ("" = keep)
-- @arg job* job per job i: six arguments (full form) or two (compact form), see the modes
-- @arg lane* lane (lanes mode) per job, after the jobs: its priority ("" = 0) or `g:<group>`
-- @arg extras* json (extras mode) per job, after the lanes: its extras, "" = none
-- @arg window? 1..2592000000 (dedup mode) the dedup window in ms (30 days at most), last but a mode
-- @arg dmode? w|d (dedup mode, optional, after the window) `w` window or `d` debounce: either
--   writes `keyof:<id>` (see the dedup modes); without it the call runs as before
-- @arg ref* business id (refs mode) per job, last of all: "" = none, else 1..200 bytes without
--   control characters and not of the branded id form (`job` and 11 base62 digits, 14 bytes)
-- @mode full 4 + 6n arguments: per job id, payload, delay, run-at, max attempts, backoff.
-- @mode compact 4 + 2n arguments: per job just the id and the payload, for jobs with no delay,
--   run-at, options, lane or extras: the same as six arguments with "0", "0", "", "".
-- @mode lanes 4 + 7n arguments: the full form, then one per job (ARGV[5+6n .. 4+7n]): its
--   priority, 0..9 ("" = 0), or `g:<group>` (a fair lane; group 1..100 of [A-Za-z0-9_.-]). A
--   ready job of level p >= 1 joins `<pending>:<p>` (derived from KEYS[2], same slot) and p
--   joins `emq:{q}:levels`; a ready job of group g joins `emq:{q}:group:<g>`; a delayed one keeps
--   its lane as a third field of its opts ("<max>|<backoff>|<p or g:<group>>"). Meta `lanes` is
--   set to 1 the first time (claim then reads levels and the ring `emq:{q}:groups`, which a lane
--   list joins when it becomes non-empty, "" for `pending`).
-- @mode extras 4 + 8n arguments: the lanes form (so a call with extras sends the lanes too, ""
--   each when none), then one per job (ARGV[5+7n .. 4+8n]): its extras, "" = none, else a JSON
--   object text of 2..1024 bytes whose known members are checked: `t` the job's own timeout (an
--   integer, 1..86400000 ms), `tp` a W3C traceparent (a string of 1..256 bytes), `n` the job's
--   name (a string of 1..128 bytes without control characters); other members are kept as they are. A job's extras ride in its opts (a fourth field,
--   "<max>|<backoff>|<lane>|<extras>") until its first claim moves them to its row's `x`; claim
--   returns them with every attempt. Meta `xtra` is set to 1 the first time.
-- @mode dedup business-key dedup, with any form: KEYS[8..7+n] one dedup key per job, and one
--   more argument after the jobs (and their lanes and extras): the window in ms. A key held by a
--   job (enqueued within the window, by this call or before) adds nothing: the reply entry is
--   that job's id. A job added sets its key to its id for the window.
-- @mode dedup-modes dedup with a mode argument after the window (lua/lib/enqueue-dedup.lua):
--   each job that takes a key also gets `emq:{q}:keyof:<id>` = its key (PX the window), which
--   cancel.lua and remove.lua read to free the key of a job they end. `w`: the window as above.
--   `d` (debounce): a repeat whose key is held by a job that still waits for its first claim
--   (payload in `data`, no row) replaces that job's payload; a holder still in `scheduled` is
--   rescored to the repeat's instant (now + delay, or run-at, or now when the repeat has none;
--   a wake marker when that is earlier); the key and its keyof are set again for the window; the
--   reply entry is the holder's id. Its options, lane and extras stay the holder's. A held key
--   whose job started or ended is taken by the new job (added as usual). Within one call a later
--   repeat's payload replaces an earlier job's of the call.
-- @mode refs business ids, with any form (and with dedup): the key emq:{q}:refs last of the keys
--   (after any dedup keys) and one argument per job last of all. A business id whose mapping
--   names a job that still exists (its payload in `data` or its row) adds nothing: the reply
--   entry is that job's id, and its dedup key (if any) is not looked at; a later job of the
--   same call with the same business id answers the first one's id. A job added with one writes
--   both fields `<business id>` = its id and `<id>` = its business id (a mapping whose job is
--   gone is replaced, its old reverse field deleted); meta `refs` is set to 1 the first time.
--   Every script that deletes job rows (complete, drain, purge, remove and the morgue and
--   cancelled trims) deletes both fields of the jobs it deletes, when meta `refs` is set.
-- @returns an array of n integers: 1 = added, 0 = a job with this id already existed (or came
--   earlier in the same call); with dedup keys, a bulk string (the holding job's id) for a job
--   whose key was held; with business ids, a bulk string (the job's id) for a held one. A wake marker is pushed (when `wake` is empty) only when a job was added.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key
--   that is not the one the key grammar spells for the queue of KEYS[1]), EMQ_WRONGTYPE (a key
--   holds another type), EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE, EMQ_BATCH_TOO_LARGE. Every check
--   comes before the first write.
-- @uses keys types meta clock events job-write enqueue-args enqueue-lanes enqueue-parked enqueue-dedup refs
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
-- A new job's arguments, checked the same way by enqueue.lua, flow-add.lua and tick.lua. `noun`
-- and `i` name the job in a refusal (`job 3`, `node 2`); the text is built only on a refusal.
-- The payload: 1..limit bytes.
local function need_payload(payload, limit, noun, i)
  if #payload == 0 then fail('BAD_ARG', noun .. ' ' .. i .. ' has an empty payload') end
  if #payload > limit then
    fail('PAYLOAD_TOO_LARGE', noun .. ' ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. limit)
  end
end
-- A backoff: `f:<ms>` fixed or `e:<ms>` exponential, ms 0..86400000.
local function good_backoff(s)
  return int(string.match(s, '^[fe]:(%d+)$'), 0, 86400000) ~= nil
end
-- Its own options, each "" for the consumer's default: max attempts 1..1000, a backoff.
local function need_job_opts(maxA, backoff, noun, i)
  if maxA ~= '' and not int(maxA, 1, 1000) then fail('BAD_ARG', noun .. ' ' .. i .. ' has bad max attempts (1..1000)') end
  if backoff ~= '' and not good_backoff(backoff) then
    fail('BAD_ARG', noun .. ' ' .. i .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
  end
end
-- A name of the key grammar (docs/protocol.md §2): a queue, a lane group, a schedule, a flow
-- child's key: 1..100 bytes of `A-Za-z0-9_.-`. True when s is not one.
local function bad_name(s)
  return type(s) ~= 'string' or #s == 0 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
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
-- Business ids (docs/protocol.md §2, §3): the hash emq:{q}:refs holds both directions of a
-- queue's business ids: field <business id> -> the job's wire id, and field <wire id> -> its
-- business id. A business id never has the branded form (`job` and 11 base62 digits, 14 bytes),
-- so the two kinds of field never meet. Meta `refs` = 1 once a queue has used one: until then
-- the scripts that end jobs read nothing more. The hash is spelt from the queue's base (same slot).

-- A business id as enqueue.lua takes it: 1..200 bytes, no control characters, not of the branded
-- form. True when `r` is not one.
local function bad_ref(r)
  return type(r) ~= 'string' or #r == 0 or #r > 200 or string.find(r, '%c') ~= nil
    or (#r == 14 and string.match(r, '^job[0-9A-Za-z]+$') ~= nil)
end
-- enqueue.lua's arguments, all checked before its first read (docs/protocol.md §3). The forms
-- differ in the arguments per job and what follows the jobs: full (6 per job), compact (2 per
-- job: id, payload), lanes (full + one priority or group per job), extras (lanes + one extras
-- text per job), and with dedup keys (KEYS[8..7+n]) the window last. The compact form's
-- per-job check is the id and payload only. With business ids (the refs key emq:{q}:refs last in
-- KEYS) one more argument per job ends the call, after everything else: its business id or "".

-- Dedup keys: one `emq:{q}:key:<key>` per job (key 1..256 bytes, no control characters) and a
-- window of 1..2592000000 ms, the last argument, or the one before a mode (`w` window, `d`
-- debounce: a word, so it cannot be mistaken for a window). Answers the window and the mode.
local function enqueue_dedup_args(K, A, b, n, len, r)
  local mode = (A[len] == 'w' or A[len] == 'd') and A[len] or nil
  local window = int(A[len - (mode and 1 or 0)], 1, 2592000000)
  need(#K == 7 + n + r and window, 'dedup needs one key per job and a window of 1..2592000000 ms after the jobs')
  for i = 1, n do
    local k = K[7 + i]
    local bk = string.sub(k, #b + 5)
    if string.sub(k, 1, #b + 4) ~= b .. 'key:' or #bk == 0 or #bk > 256 or string.find(bk, '%c') then
      fail('BAD_ARG', 'key ' .. (7 + i) .. ' must be the queue\'s key: prefix and a dedup key of 1..256 bytes without control characters')
    end
  end
  return window, mode
end
-- Extras (A[5+7n .. 4+8n]): each job's text, or nil for "": a JSON object of 2..1024 bytes,
-- `t` an integer 1..86400000, `tp` a string of 1..256 bytes, `n` (the job's name) a string of
-- 1..128 bytes without control characters.
local function enqueue_extras(A, n)
  local ext = {}
  for i = 1, n do
    local x = A[4 + 7 * n + i]
    if x ~= '' then
      local ok, v = false, nil
      if #x >= 2 and #x <= 1024 and string.sub(x, 1, 1) == '{' then ok, v = pcall(cjson.decode, x) end
      local o = ok and type(v) == 'table' and v or {}
      local tm, tp, nm = o.t, o.tp, o.n
      if not ok or type(v) ~= 'table' or (tm ~= nil and (type(tm) ~= 'number' or tm ~= math.floor(tm) or tm < 1 or tm > 86400000))
        or (tp ~= nil and (type(tp) ~= 'string' or #tp == 0 or #tp > 256))
        or (nm ~= nil and (type(nm) ~= 'string' or #nm == 0 or #nm > 128 or string.find(nm, '%c'))) then
        fail('BAD_ARG', 'job ' .. i .. ' has bad extras (a JSON object of 2..1024 bytes; t 1..86400000, tp a string of 1..256 bytes, n a name of 1..128 bytes without control characters)')
      end
      ext[i] = x
    end
  end
  return ext
end
-- Lanes (A[5+6n .. 4+7n]): each job's priority 0..9 ("" = 0), or `g:<group>` (a fair lane; its
-- priority 0). Answers pri (job -> level) and grp (job -> group or nil).
local function enqueue_lanes_args(A, n)
  local pri, grp = {}, {}
  for i = 1, n do
    local p = A[4 + 6 * n + i]
    local g = string.match(p, '^g:(.*)$')
    if g then
      if bad_name(g) then fail('BAD_ARG', 'job ' .. i .. ' has a bad group (1..100 of A-Z a-z 0-9 _ . -)') end
      grp[i] = g
      pri[i] = 0
    else
      pri[i] = p == '' and 0 or int(p, 0, 9)
      if not pri[i] then fail('BAD_ARG', 'job ' .. i .. ' has a bad priority (0..9, "" = 0) or group (g:<name>)') end
    end
  end
  return pri, grp
end
-- All of it, in the order the checks have always run. Answers a table: n, S (arguments per
-- job: 2 compact, 6 otherwise), keyed, window, prio (lanes given), pri, grp, ext (extras given),
-- setLog (the events log length to record, or nil), ids, refs (job -> business id, when the refs
-- key is given).
local function enqueue_args(K, A, b)
  local maxBytes, n = int(A[2], 1, 536870912), int(A[3], 1, 1000000000)
  need(maxBytes and n, 'the payload limit must be an integer in 1..536870912 and the job count an integer >= 1')
  if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 jobs per call') end
  -- Business ids: the refs key last (a dedup key is never it), and the last n arguments.
  local r = #K > 7 and K[#K] == b .. 'refs' and 1 or 0
  local len = #A - r * n
  local c = { n = n, keyed = #K > 7 + r }
  if r == 1 then
    need(len >= 4, 'business ids need one argument per job, last')
    c.refs = {}
    for i = 1, n do
      local ref = A[len + i]
      if ref ~= '' then
        if bad_ref(ref) then fail('BAD_ARG', 'job ' .. i .. ' has a bad business id (1..200 bytes, no control characters, not of the branded id form)') end
        c.refs[i] = ref
      end
    end
  end
  if c.keyed then c.window, c.mode = enqueue_dedup_args(K, A, b, n, len, r) end
  local tail = c.keyed and (c.mode and 2 or 1) or 0 -- the dedup window (and mode), last
  local xtra = len == 4 + 8 * n + tail -- extras come after the lanes
  c.prio = xtra or len == 4 + 7 * n + tail
  -- The compact form: two arguments per job (id, payload), every other field its default.
  local S = len == 4 + 2 * n + tail and 2 or 6
  if len ~= 4 + 6 * n + tail and not c.prio and S ~= 2 then
    fail('BAD_ARG', 'expected 7 keys and ' .. (6 * n) .. ' job arguments (or ' .. (2 * n) .. ' in the compact form, ' .. (7 * n) .. ' with priorities, ' .. (8 * n) .. ' with extras)' .. (c.keyed and ', then the dedup window (and mode)' or '') .. (r == 1 and ', then one business id per job' or ''))
  end
  c.S = S
  if xtra then c.ext = enqueue_extras(A, n) end
  if c.prio then c.pri, c.grp = enqueue_lanes_args(A, n) end
  if A[4] ~= '' then
    c.setLog = int(A[4], 0, 1000000)
    need(c.setLog, 'lifecycle-log length must be 0..1000000')
  end
  local ids = {}
  for i = 1, n do
    local j = 4 + S * (i - 1)
    local id = A[j + 1]
    if bad_id(id) then fail('BAD_ID', 'job ' .. i .. ' has a malformed id') end
    need_payload(A[j + 2], maxBytes, 'job', i)
    if S == 6 then
      if not int(A[j + 3], 0, 315360000000) or not int(A[j + 4], 0, 7258118400000) then
        fail('BAD_ARG', 'job ' .. i .. ' has a bad delay (0..315360000000 ms) or run-at (0..7258118400000)')
      end
      need_job_opts(A[j + 5], A[j + 6], 'job', i)
    end
    ids[i] = id
  end
  c.ids = ids
  return c
end
-- enqueue.lua's dedup modes (docs/protocol.md §5, enqueue, "Dedup modes"), given as one more
-- argument after the window: `w` (window) or `d` (debounce). Either mode also writes
-- `keyof:<id>` = the key (PX the window) for each job that takes a key, so that cancel.lua and
-- remove.lua free the key of the job they end. Without a mode argument none of this runs.

-- Debounce: whether the job `id` holding a key still waits for its first claim (its payload in
-- `data`, no row): answers 'scheduled' with its run-at, 'pending', or nil (it started, ended or
-- is gone: the new job is added and takes the key). Reads only.
local function dedup_holder_waits(b, K, id)
  local p = checked(redis.pcall('HGET', K[5], id), K[5])
  if not p or p == '' then return nil end
  if redis.call('EXISTS', b .. 'job:' .. id) == 1 then return nil end
  local at = checked(redis.pcall('ZSCORE', K[3], id), K[3])
  if at then return 'scheduled', tonumber(at) end
  return 'pending'
end
-- Debounce writes, after the new jobs': each waiting holder gets the repeat's payload, and a
-- holder still in `scheduled` the repeat's instant (now when the repeat has none); a holder made
-- earlier gets a wake marker (when `wake` is empty) so that idle consumers re-read their wait.
-- deb: { { id, payload, at, old run-at or nil }, … }.
local function dedup_debounce(K, deb, now)
  local wake = false
  for i = 1, #deb do
    local d = deb[i]
    redis.call('HSET', K[5], d[1], d[2])
    if d[4] then
      local at = d[3] > now and d[3] or now
      redis.call('ZADD', K[3], 'XX', at, d[1])
      if at < d[4] then wake = true end
    end
  end
  if wake and redis.call('LLEN', K[4]) == 0 then redis.call('LPUSH', K[4], '1') end
end
-- The key of each job that took one (and, in debounce mode, of each holder a repeat refreshed):
-- the key and its `keyof:<id>`, both PX the window.
local function dedup_hold(b, key, id, window)
  redis.call('SET', key, id, 'PX', window)
  redis.call('SET', b .. 'keyof:' .. id, string.sub(key, #b + 5), 'PX', window)
end
-- enqueue.lua with lanes (docs/protocol.md §5, Priorities and Fair lanes): a ready job of level
-- p >= 1 joins `<pending>:<p>` and p joins `levels`; a ready job of group g joins `group:<g>`;
-- in lanes mode (meta `lanes`, or this call turns it on) a lane list that goes from empty to
-- non-empty joins the ring `groups` ("" for `pending`), so claim rotates over it.

-- The second pass over the jobs added (out[i] == 1), so the plain loop stays as it is: a
-- delayed job's lane waits in opts (a third field: the priority, or g:<group>) for its promotion
-- by claim, and a job's extras (a fourth field) for its first claim; a later field of one HSET
-- wins over an earlier one. Answers plainQ (the queued ids of level 0 without a group), byLevel
-- (level -> ids), byGroup (group -> ids), groupOrder (the groups in order of first appearance),
-- lanesOn (a job of this call has a lane) and xtraOn (a job of this call has extras).
local function enqueue_lanes_split(c, A, out, queued, scheduled, opts)
  local pri, grp, ext, ids = c.pri, c.grp, c.ext, c.ids
  local plainQ, byLevel, byGroup, groupOrder, lanesOn, xtraOn = {}, {}, {}, {}, false, false
  local lv, lg, delayed = {}, {}, {}
  for j = 1, #scheduled do delayed[scheduled[j]] = true end
  for i = 1, c.n do
    local p, g, id = pri[i], grp[i], ids[i]
    local x = ext and out[i] == 1 and ext[i]
    if out[i] == 1 and (p > 0 or g) then
      lanesOn = true
      lv[id], lg[id] = p, g
    end
    local lane = out[i] == 1 and delayed[id] and (p > 0 or g) and (g and ('g:' .. g) or p)
    if lane or x then
      local j = 4 + 6 * (i - 1)
      opts[#opts + 1] = id
      opts[#opts + 1] = A[j + 5] .. '|' .. A[j + 6] .. '|' .. (lane or '') .. (x and ('|' .. x) or '')
      if x then xtraOn = true end
    end
  end
  for j = 1, #queued do
    local id = queued[j]
    local p, g = lv[id], lg[id]
    if g then
      local l = byGroup[g]
      if not l then l = {}; byGroup[g] = l; groupOrder[#groupOrder + 1] = g end
      l[#l + 1] = id
    elseif p and p > 0 then
      local l = byLevel[p]
      if not l then l = {}; byLevel[p] = l end
      l[#l + 1] = id
    else
      plainQ[#plainQ + 1] = id
    end
  end
  return plainQ, byLevel, byGroup, groupOrder, lanesOn, xtraOn
end
-- Before the first write: `levels`, the ring and every level or group list written are
-- type-checked (byLevel and groupOrder nil when the call gave no lanes).
local function enqueue_lanes_check(b, pending, byLevel, groupOrder)
  checked(redis.pcall('ZCARD', b .. 'levels'), b .. 'levels')
  checked(redis.pcall('LLEN', b .. 'groups'), b .. 'groups')
  if not byLevel then return end
  for p = 1, 9 do
    if byLevel[p] then checked(redis.pcall('LLEN', pending .. ':' .. p), pending .. ':' .. p) end
  end
  for j = 1, #groupOrder do
    local key = b .. 'group:' .. groupOrder[j]
    checked(redis.pcall('LLEN', key), key)
  end
end
-- The pushes onto the group and level lists; a group list that was empty is added to ringAdd.
local function enqueue_lanes_push(b, pending, byLevel, byGroup, groupOrder, ringAdd)
  for j = 1, #groupOrder do
    local g = groupOrder[j]
    if redis.call('LPUSH', b .. 'group:' .. g, unpack(byGroup[g])) == #byGroup[g] then ringAdd[#ringAdd + 1] = g end
  end
  for p = 1, 9 do
    local l = byLevel[p]
    if l then
      redis.call('LPUSH', pending .. ':' .. p, unpack(l))
      redis.call('ZADD', b .. 'levels', p, p)
    end
  end
end
-- After the pushes: the first lanes of the queue set meta `lanes` (and the jobs without a group
-- enqueued before it: `pending` joins the ring too); the lanes that became non-empty join the ring.
local function enqueue_lanes_ring(K, b, wasOn, lanesOn, plainQ, ringAdd)
  if lanesOn and not wasOn then
    redis.call('HSET', K[1], 'lanes', '1')
    if ringAdd[1] ~= '' and redis.call('LLEN', K[2]) > #plainQ then table.insert(ringAdd, 1, '') end
  end
  if #ringAdd > 0 then redis.call('LPUSH', b .. 'groups', unpack(ringAdd)) end
end
-- The anchor of `active` (docs/protocol.md §2): a member at score +inf that keeps the zset in
-- skiplist encoding. Every script that adds to `active` adds it with the job (claim.lua, and
-- enqueue.lua's lease to a parked consumer); it is never a job.
local ANCHOR = '~ EchoMQ anchor: keeps this zset in skiplist encoding; score +inf, never a job ~'
-- enqueue.lua's lease to a parked consumer (docs/protocol.md §5, "Parked consumers"): one plain
-- job, ready now, on a queue with nothing pending, no lanes and no pause, is leased here to the
-- consumer of the zset `parked` whose current registration ends last, as its claim would lease
-- it, and its lease text goes to that consumer's `inbox:<tag>`, which it blocks on: the job
-- skips `pending` and the consumer's claim call. Anything unusual (a key of another type, a row
-- the id already has, a malformed registration) is left to the claim path: no lease, no error.

-- The registration to lease job `id` to, or nil: reads only, every one through pcall.
local function parked_target(b, pending, id, now)
  local parked = b .. 'parked'
  local reg = redis.pcall('ZRANGE', parked, '+inf', now, 'BYSCORE', 'REV', 'LIMIT', 0, 1)
  local lease, tag = nil, nil
  if not reg.err and reg[1] then lease, tag = string.match(reg[1], '^(%d+):([0-9A-Za-z]+)$') end
  lease = lease and #lease < 9 and tonumber(lease)
  if not (lease and lease >= 1 and lease <= 86400000 and #tag <= 32) then return nil end
  local inbox, row = b .. 'inbox:' .. tag, b .. 'job:' .. id
  -- `pending` and the inbox empty and no row: none of the three exists (Valkey keeps no empty
  -- list, and a key of another type exists); `active` a zset or absent (ZCARD refuses another type).
  if redis.pcall('EXISTS', pending, inbox, row) == 0 and type(redis.pcall('ZCARD', b .. 'active')) == 'number' then
    return { member = reg[1], parked = parked, lease = lease, inbox = inbox, row = row }
  end
  return nil
end
-- The lease, as claim.lua writes a first claim's: `active` (with the anchor), a fenced token
-- from meta `token`, the row; the registration is used up; "<id> <token> <payload>" goes to the
-- inbox (the id is 14 bytes and the token digits, so the payload starts after the second space).
-- With `stamp` (meta `stamp` = 1: attempt starts recorded), the row's `started` too.
local function parked_lease(meta, b, hand, id, payload, now, stamp)
  redis.call('ZADD', b .. 'active', 'inf', ANCHOR, now + hand.lease, id)
  local token = redis.call('HINCRBY', meta, 'token', 1)
  if stamp then redis.call('HSET', hand.row, 'status', 'active', 'token', token, 'attempts', 1, 'started', now)
  else redis.call('HSET', hand.row, 'status', 'active', 'token', token, 'attempts', 1) end
  redis.call('ZREM', hand.parked, hand.member)
  redis.call('RPUSH', hand.inbox, id .. ' ' .. token .. ' ' .. payload)
  redis.call('PEXPIRE', hand.inbox, hand.lease)
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
need(#KEYS >= 7 and #ARGV >= 4, 'expected 7 keys and at least 4 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'pending', 'scheduled', 'wake', 'data', 'opts', 'events' })
local c = enqueue_args(KEYS, ARGV, b)
local n, S, keyed, ids = c.n, c.S, c.keyed, c.ids

-- Reads first: every key this call writes is read (or is the first write) before anything is
-- written, so a key of the wrong type is refused with nothing changed.
local meta = queue_meta(KEYS[1])
local elog = meta.elog
local have = checked(redis.pcall('HMGET', KEYS[5], unpack(ids)), KEYS[5])
-- Business ids: each one's job, when its mapping names a job that still exists (payload or row).
local refKey, refHit, refTaken, refStale = c.refs and b .. 'refs', nil, nil, nil
if refKey then
  refHit, refTaken, refStale = {}, {}, {}
  local list, at = {}, {}
  for i = 1, n do
    local r = c.refs[i]
    if r and not at[r] then list[#list + 1] = r; at[r] = true end
  end
  local got = #list > 0 and checked(redis.pcall('HMGET', refKey, unpack(list)), refKey) or {}
  if #list == 0 then need_type(refKey, 'hash') end
  for i = 1, #list do
    local w = got[i]
    if w and (redis.call('HEXISTS', KEYS[5], w) == 1 or redis.call('EXISTS', b .. 'job:' .. w) == 1) then refHit[list[i]] = w
    elseif w then refStale[#refStale + 1] = w end -- its job is gone: the mapping is replaced
  end
end
local holders, taken = nil, nil
if keyed then
  holders, taken = {}, {}
  for i = 1, n do holders[i] = checked(redis.pcall('GET', KEYS[7 + i]), KEYS[7 + i]) end
end
local now = now_ms()
local out, data, opts, queued, scheduled, zargs, seen = {}, {}, {}, {}, {}, {}, {}
local deb = c.mode == 'd' and {} or nil -- debounce: the holders to update, and payload slots
local dpos = deb and {}
for i = 1, n do
  local j = 4 + S * (i - 1)
  local id = ids[i]
  local key = keyed and KEYS[7 + i]
  local ref = refKey and c.refs[i]
  local rheld = ref and (refTaken[ref] or refHit[ref]) or nil
  local held = rheld or (keyed and (taken[key] or holders[i]))
  if rheld then
    -- A business id held: nothing of this job is written, not even a debounce.
  elseif held and deb then
    -- Debounce: a holder of this call takes the later payload; a stored one that still waits
    -- takes the payload and the instant; one that started or ended leaves the key to this job.
    if taken[key] then
      data[dpos[held]] = ARGV[j + 2]
    else
      local st, at0 = dedup_holder_waits(b, KEYS, held)
      if st then
        local at = 0
        if S == 6 then
          local delay = tonumber(ARGV[j + 3])
          at = delay > 0 and now + delay or tonumber(ARGV[j + 4])
        end
        deb[#deb + 1] = { held, ARGV[j + 2], at, at0 }
        deb[held] = key
      else
        held = nil
      end
    end
  end
  if held then
    out[i] = held
  elseif have[i] or seen[id] then
    out[i] = 0
  else
    if keyed then taken[KEYS[7 + i]] = id end
    if ref then refTaken[ref] = id end
    seen[id] = true
    out[i] = 1
    data[#data + 1] = id
    data[#data + 1] = ARGV[j + 2]
    if dpos then dpos[id] = #data end
    local at = 0
    if S == 6 then
      local delay = tonumber(ARGV[j + 3])
      at = delay > 0 and now + delay or tonumber(ARGV[j + 4])
      local maxA, backoff = ARGV[j + 5], ARGV[j + 6]
      if maxA ~= '' or backoff ~= '' then
        opts[#opts + 1] = id
        opts[#opts + 1] = maxA .. '|' .. backoff
      end
    end
    if at > now then
      zargs[#zargs + 1] = at
      zargs[#zargs + 1] = id
      scheduled[#scheduled + 1] = id
    else
      queued[#queued + 1] = id
    end
  end
end
local plainQ, byLevel, byGroup, groupOrder, lanesOn, xtraOn = queued, nil, nil, nil, false, false
if c.prio then
  plainQ, byLevel, byGroup, groupOrder, lanesOn, xtraOn = enqueue_lanes_split(c, ARGV, out, queued, scheduled, opts)
end
local lanesMode = lanesOn or meta.lanes == '1'
if c.setLog then elog = c.setLog end
local hand = nil
if n == 1 and S == 2 and #queued == 1 and not lanesMode and meta.paused ~= '1' and not meta.rate and not meta.gpol and (not meta.token or string.match(meta.token, '^%d+$')) then
  hand = parked_target(b, KEYS[2], queued[1], now)
end
local wakeLen, ringAdd = 1, lanesMode and {} or nil
if #data > 0 then
  -- `wake` is read only on the plain path (a lease to a parked consumer pushes no marker).
  wakeLen = check_new_jobs(KEYS, elog, not hand, #opts > 0, #queued > 0 and #zargs > 0)
  if lanesMode then enqueue_lanes_check(b, KEYS[2], byLevel, groupOrder) end
  if hand then
    parked_lease(KEYS[1], b, hand, queued[1], data[2], now, meta.stamp == '1')
  else
    local len = push_new_jobs(KEYS, plainQ, zargs)
    if lanesMode and len == #plainQ then ringAdd[#ringAdd + 1] = '' end
    if byLevel then enqueue_lanes_push(b, KEYS[2], byLevel, byGroup, groupOrder, ringAdd) end
  end
  store_new_jobs(KEYS, data, opts)
  if keyed then
    for i = 1, n do
      if out[i] == 1 then
        if c.mode then dedup_hold(b, KEYS[7 + i], ids[i], c.window) else redis.call('SET', KEYS[7 + i], ids[i], 'PX', c.window) end
      end
    end
  end
end
local refSet = nil
if refKey then
  refSet = {}
  for i = 1, n do
    if out[i] == 1 and c.refs[i] then
      refSet[#refSet + 1] = c.refs[i]; refSet[#refSet + 1] = ids[i]
      refSet[#refSet + 1] = ids[i]; refSet[#refSet + 1] = c.refs[i]
    end
  end
  if #refSet > 0 then
    if #refStale > 0 then redis.call('HDEL', refKey, unpack(refStale)) end
    redis.call('HSET', refKey, unpack(refSet))
  end
end
if deb and #deb > 0 then
  dedup_debounce(KEYS, deb, now)
  for i = 1, #deb do dedup_hold(b, deb[deb[i][1]], deb[i][1], c.window) end
end
stamp_version(KEYS[1], meta.v)
if lanesMode then enqueue_lanes_ring(KEYS, b, meta.lanes == '1', lanesOn, plainQ, ringAdd) end
if refSet and #refSet > 0 and meta.refs ~= '1' then redis.call('HSET', KEYS[1], 'refs', '1') end
if xtraOn and meta.xtra ~= '1' then redis.call('HSET', KEYS[1], 'xtra', '1') end
if c.setLog and c.setLog ~= meta.elog then redis.call('HSET', KEYS[1], 'elog', c.setLog) end
announce_new_jobs(KEYS, elog, wakeLen, queued, scheduled)
if hand then emit(KEYS[7], elog, 'claimed', queued) end
return out
end
return run(main)
