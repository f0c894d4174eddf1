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
