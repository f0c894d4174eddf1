#!lua flags=allow-oom
-- claim.lua: EchoMQ protocol v2. Built from lua/src/claim.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Promotes due scheduled jobs to pending, then claims up to n pending jobs for one consumer: each
-- gets a lease on the server clock, a fencing token minted from the queue's monotonic counter,
-- and one more counted attempt. The first claim of a job creates its row (and moves its own
-- options, if any, into it). A claim that claims adds the anchor to `active` (docs/protocol.md
-- §2: a member at score +inf that keeps the zset in skiplist encoding). Jobs are claimed oldest
-- first: pending in FIFO order, then the jobs this call promoted.
-- Priorities (meta `lanes` set): level p 1..9 waits in `<pending>:<p>` (derived from KEYS[2],
-- same slot), `emq:{q}:levels` lists the levels with ids; claimed highest level first, FIFO
-- within a level, at most ten lists read whatever the backlog; a due job joins the list of its
-- level (its row's `prio`, else the third field of its opts) and a claimed one gets `prio` in
-- its row. Level 0 runs fair lanes (groups; lua/lib/claim-fair.lua, claim-policy.lua).
-- A paused queue (meta `paused` = 1, pause.lua) answers { -2, 6 } and writes nothing.
-- An id whose data is gone (deleted by hand) is dropped from pending, without a row; a ghost
-- (data "", left by cancel.lua) is dropped too, its payload moved from its row back to `data`
-- and meta `ghosts` decremented.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: allow-oom: it moves work forward and writes at most a row per job it claims.
--
-- Rate limit and group policy: the stored ones (policy.lua: meta `rate` "<max> <ms>", a fixed
--   window counted in `emq:{q}:rate` with PX, or "<max> <ms> sliding", at most max in any ms,
--   logged in the zset `emq:{q}:rlog` (lua/lib/claim-slide.lua); a limited call's wait the ms
--   until the window has room again; meta `gpol`, read in lanes mode, validated always), read in
--   the one meta read: a claim carries no limits, so every claim of every runtime enforces the
--   same rule. Paused lanes (meta `gpaused`, policy.lua's `pause`): read in lanes mode when level
--   0 has jobs to give (one HGET); a paused lane gives no job and its work is not remaining.
-- @mode plain 9 keys, 4 or 5 arguments (version, n, lease, promote[, default fair]).
-- @mode parked 11 keys, 5 or 6 arguments: the claim a parked consumer sends ahead of its
--   `BLPOP inbox:<tag> wake` (docs/protocol.md §5, "Parked consumers"), ARGV[5] the
--   registration's ms (1..86400000). After claiming, when it claimed fewer than n jobs and the
--   inbox is empty, it registers `<lease ms = ARGV[3]>:<tag>` in `parked` until now + ARGV[5] ms
--   (dropping registrations that ran out), so that an enqueue may lease one job to the
--   consumer; otherwise (no free slot left, or a lease already waiting) it removes that member,
--   and pushes "" to an empty inbox (PX ARGV[5]) so that the BLPOP returns at once. A paused
--   queue answers { -2, 6 }; a queue with a stored policy (meta `rate`/`gpol`) is claimed as in
--   mode plain. Neither registers nor pushes "" (the BLPOP waits on `wake`, as a plain wait).
-- @key meta emq:{q}:meta queue meta hash (`v` version, `token` fencing counter)
-- @key pending emq:{q}:pending list of pending ids
-- @key scheduled emq:{q}:scheduled zset id -> run-at (ms)
-- @key active emq:{q}:active zset id -> lease deadline (ms), and the anchor at +inf
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> "<max attempts>|<backoff>" (until the first claim)
-- @key rows emq:{q}:job: prefix of job rows (a row is this prefix followed by the id)
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key parked? emq:{q}:parked (mode parked) the zset of parked registrations
-- @key inbox? emq:{q}:inbox:<tag> (mode parked) the inbox of the consumer that claims
-- @arg version version the protocol version
-- @arg n 0..1000 the most jobs to claim (0 only promotes)
-- @arg lease 1..86400000 lease in ms
-- @arg promote 0..10000 the most scheduled jobs to promote in this call, earliest run-at first
-- @arg registration? 1..86400000 (mode parked) the registration's ms
-- @arg default-fair? ""|0|fair (optional, last: ARGV[5] in mode plain, ARGV[6] in mode parked) `fair`:
--   a queue in lanes mode without a stored group policy (meta `gpol`) is claimed under the
--   default policy `*=0,1,0,0` (every lane weight 1: the policy walk, its turn kept in `gturn`),
--   so a claim of n deals the turns n claims of one deal; absent, "" or "0": the old rotation
--   (claim-fair.lua), byte for byte. Changes nothing when a policy is stored, or outside lanes
--   mode. Anything else is EMQ_BAD_ARG, nothing written: 1 too (a word, so that a claim passing
--   a limit, e.g. 1, stays refused: a claim carries no limits, conformance rate.json).
-- @arg stamp? ""|0|1 (optional, after default-fair, protocol v2 additive) `1`: record attempt
--   starts: sets meta `stamp` = 1 (once: when it claims a job or registers parked), and while
--   meta `stamp` is 1 every claim (this one, any other caller's, enqueue's lease to a parked
--   consumer) writes the row's `started` (now, server clock) in the HSET it already does: one
--   field, no command. Absent, "" or "0": as before.
-- @returns { wait, width, id_1, token_1, attempt_1, payload_1, extras_1, flow_1, ..., id_k, ...,
--   flow_k } (k <= n): width = 6, the fields per job (a reader takes the width from the reply
--   and skips the fields beyond those it knows: fields are appended only where the reply
--   declares its width). wait is -1 when jobs remain pending, else the ms until the next
--   scheduled job is due (0 when one is due already; -2 when none is scheduled; at most
--   2^53-1); a paused queue answers { -2, 6 }.
--   wait, width, token and attempt are integer replies; id, payload, extras and flow bulk
--   strings. extras is "" for a job enqueued without extras, else the JSON object text enqueue
--   stored (docs/protocol.md §3, "Extras"): the first claim moves it from the fourth field of
--   its opts to its row's `x`, later claims read it there (only once meta `xtra` is set: a
--   queue that never had extras reads nothing more). flow is "" for a plain job (and for a
--   first claim, which has no row), "c" when its row names a `parent` (a flow child: its
--   settle owes its parent a hand-off, so the peer sends the outbox keys), "p" when its row
--   has `deps` (a flow parent released by its children: their `r:<child>` results are in its
--   row), "pc" both; read in the row read the claim makes anyway (no command added).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key
--   that is not the one the key grammar spells for the queue of KEYS[1], a stored group policy
--   that policy.lua would refuse), EMQ_WRONGTYPE (a key, or meta `token`, holds another type;
--   meta `rate` is not "<max> <ms>" in range). Every check and every read comes before the first
--   write, but for one: fair lanes without a policy pop a lane's ids as they read them
--   (pop-as-read), and a refusal after those pops pushes the popped ids back first
--   (on_refusal), so a refused claim still changes nothing.
-- @flags allow-oom
-- @uses args keys types meta events policy-text claim-lanes claim-park claim-rate claim-rows
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
local function on_refusal(fn) refusal_hook = fn end
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
-- A queue's policy as policy.lua validates it and claim reads it (docs/protocol.md §5, "Rate
-- limits" and "Group policy"): one parser for both, so the stored text is exactly what a claim
-- enforces.
-- policy_rate(max, ms): a rate limit of max jobs (1..1000000) per ms (1..86400000), or 0, 0 for
-- none; answers max, ms, or nil when the pair is out of range (or only one of them is 0).
local function policy_rate(max, ms)
  local m, w = int(max, 0, 1000000), int(ms, 0, 86400000)
  if not m or not w or (m == 0) ~= (w == 0) then return nil end
  return m, w
end
-- policy_rate_text(text): a stored rate (meta `rate`): "<max> <ms>" (a fixed window) or
-- "<max> <ms> sliding", max 1..1000000, ms 1..86400000; answers max, ms, sliding (a boolean), or
-- nil when the text is not one of these.
local function policy_rate_text(text)
  local max, ms, mode = string.match(text, '^(%d+) (%d+)(.*)$')
  if mode ~= '' and mode ~= ' sliding' then return nil end
  local m, w = policy_rate(max, ms)
  if not m or m == 0 then return nil end
  return m, w, mode == ' sliding'
end
-- policy_groups(spec): the group policy as pol[group] (or pol['*']) = { cap, weight, rate max,
-- rate ms, sliding }, and whether any entry has a cap. Space-separated entries
-- `<who>=<cap>,<weight>,<rate max>,<rate ms>[,sliding]`, who `*` (every group; required) or
-- `g:<group>` (one group; at most 1000 entries, 65536 bytes): at most cap jobs of a group active
-- at once (0 = no cap; 1..100000), weight jobs per turn of the rotation (1..1000), at most rate
-- max jobs per rate ms window (0,0 = none; 1..1000000 per 1..86400000), a fixed window unless
-- the entry ends `,sliding` (a sliding one: at most rate max in any rate ms; only with a rate).
-- EMQ_BAD_ARG otherwise.
local function policy_groups(spec)
  local pol, polCap, cnt = {}, false, 0
  need(#spec <= 65536, 'group policy is at most 65536 bytes')
  for tok in string.gmatch(spec, '%S+') do
    cnt = cnt + 1
    local who, c, w, r, ms, win = string.match(tok, '^([^=]+)=([^,]*),([^,]*),([^,]*),([^,]*)(.*)$')
    c, w, r, ms = int(c, 0, 100000), int(w, 1, 1000), int(r, 0, 1000000), int(ms, 0, 86400000)
    local g = who and (who == '*' and '*' or string.match(who, '^g:([A-Za-z0-9_.-]+)$'))
    if cnt > 1001 or not g or #g > 100 or not c or not w or not r or not ms or (r == 0) ~= (ms == 0) or pol[g]
      or (win ~= '' and (win ~= ',sliding' or r == 0)) then
      fail('BAD_ARG', 'group policy entry ' .. cnt .. ' must be <*|g:group>=<cap 0..100000>,<weight 1..1000>,<rate max 0..1000000>,<rate ms 0..86400000>[,sliding] (rate 0,0 = none; sliding only with a rate; each group once)')
    end
    pol[g] = { c, w, r, ms, win == ',sliding' }
    if c > 0 then polCap = true end
  end
  need(pol['*'], 'group policy needs the entry *=<cap>,<weight>,<rate max>,<rate ms>')
  return pol, polCap
end
-- policy_paused(text): the paused lanes (meta `gpaused`, policy.lua's `pause`: group names
-- separated by spaces) as a set, or nil when none is paused (absent or "").
local function policy_paused(text)
  if not text or text == '' then return nil end
  local set = {}
  for g in string.gmatch(text, '%S+') do set[g] = true end
  return set
end
-- Claim, lanes mode, level 0 without a group policy: fair lanes (docs/protocol.md §5). The ring
-- `groups` (a list, its RPOP end served next) names the lanes with pending work: a group (its
-- list `group:<g>`) or "" (`pending`, the jobs without a group). One claim serves the next
-- `need` lanes of the ring one job per lane per round, then moves them to the back: a lane with
-- work gets a job within the next G claimed jobs (G = the lanes with work). Ring entries are
-- hints: an empty lane is dropped when it comes up.
-- Pop-as-read: one RPOP per lane of the window takes its oldest q ids (q = a fair share of
-- need), the read and the pop in one command. The lanes whose pop took all q may hold more: one
-- EXISTS over them tells (one per lane only when some lane ended exactly empty). What a lane
-- took beyond what the rounds give it goes back (RPUSH, with the writes); a refusal after the
-- first pop pushes every popped id back first (on_refusal), so a refused claim changes nothing.
-- st is the lanes state of claim-lanes.lua: this adds to st.take/st.tgr, st.lrem, st.ringPop,
-- st.ringPush and the level-0 lane writes st.lwk/lwd/lwp/lwn.
local function claim_fair_lanes(st, KEYS, b)
  local ringKey, need, dueG, take, tgr, ringPush = st.ringKey, st.need, st.dueG, st.take, st.tgr, st.ringPush
  local lrem, none = st.lrem, {}
  local ring = redis.pcall('LRANGE', ringKey, -(need + 1), -1)
  if ring.err then checked(ring, ringKey) end
  local win, inWin = {}, {}
  local ringPop = math.min(need, #ring)
  for i = #ring, #ring - ringPop + 1, -1 do
    if not inWin[ring[i]] then inWin[ring[i]] = true; win[#win + 1] = ring[i] end
  end
  if #ring > ringPop then lrem = lrem + 1 end -- lanes beyond this claim's window
  local wholeRing = #ring <= need
  if wholeRing and not inWin[''] then inWin[''] = true; win[#win + 1] = '' end -- jobs without a group, not in the ring
  for g, d in pairs(dueG) do
    if not inWin[g] and #d > 0 then win[#win + 1] = g; inWin[g] = 'due' end
  end
  -- (Parallel arrays and one key spelt per lane: this loop runs once per lane of the window.)
  local nw, gpre = #win, b .. 'group:'
  local q = math.ceil(need / math.max(1, nw))
  if q == 1 and nw == need and not wholeRing and not next(dueG) then
    -- The steady state (a ring longer than need, no repeated hint, no due job): each lane of
    -- the window gives its oldest id, in window order, in one pass; one EXISTS over the lanes
    -- that gave tells which go to the back of the ring (an emptied one is gone, and dropped).
    local nk, pk, np = #take, {}, 0
    local base = nk
    on_refusal(function() for x = 1, np do redis.call('RPUSH', pk[x], take[base + x]) end end)
    for j = 1, nw do
      local g = win[j]
      local key = g == '' and KEYS[2] or gpre .. g
      local r = redis.pcall('RPOP', key)
      if r then
        if type(r) == 'table' then checked(r, key) end
        np, nk = np + 1, nk + 1
        pk[np], take[nk], tgr[nk] = key, r, g
      end
    end
    if np > 0 then
      local all = redis.call('EXISTS', unpack(pk)) == np
      for x = 1, np do
        if all or redis.call('EXISTS', pk[x]) == 1 then lrem = lrem + 1; ringPush[#ringPush + 1] = tgr[base + x] end
      end
    end
  else
    -- The general case: rounds over the window (a short ring, repeated hints, due jobs).
    local lk, tails, total, got, act, na, more, full = {}, {}, {}, {}, {}, 0, {}, {}
    on_refusal(function()
      for j = 1, #tails do
        local t = tails[j]
        if #t > 0 then
          local back = {}
          for i = #t, 1, -1 do back[#back + 1] = t[i] end
          redis.call('RPUSH', lk[j], unpack(back))
        end
      end
    end)
    for j = 1, nw do
      local g = win[j]
      local key = g == '' and KEYS[2] or gpre .. g
      local t
      if inWin[g] == 'due' or q == 0 then
        -- Outside the ring, with due jobs only (or nothing to claim): gives nothing now; its
        -- length says whether work remains and whether the lane joins the ring as they land.
        local len = redis.pcall('LLEN', key)
        if type(len) == 'table' then checked(len, key) end
        t, more[j] = {}, len > 0
      elseif q == 1 then
        local r = redis.pcall('RPOP', key)
        if type(r) == 'table' then checked(r, key) end
        t = r and { r } or {}
      else
        t = redis.pcall('RPOP', key, q)
        if t and t.err then checked(t, key) end
        t = t or {}
      end
      lk[j], tails[j], got[j] = key, t, 0
      if q > 0 and #t == q and inWin[g] ~= 'due' then full[#full + 1] = j end
    end
    if #full > 0 then
      local keys = {}
      for x = 1, #full do keys[x] = lk[full[x]] end
      local all = redis.call('EXISTS', unpack(keys)) == #full
      for x = 1, #full do more[full[x]] = all or redis.call('EXISTS', keys[x]) == 1 end
    end
    for j = 1, nw do
      local tot = more[j] and q or #tails[j] + #(dueG[win[j]] or none)
      total[j] = tot
      if tot > 0 and inWin[win[j]] ~= 'due' then na = na + 1; act[na] = j end
    end
    -- One job per lane per round, in window order, until need runs out (act: the lanes that can
    -- still give, compacted in place).
    while need > 0 and na > 0 do
      local m = 0
      for x = 1, na do
        if need == 0 then break end
        local j = act[x]
        local gj = got[j] + 1
        got[j], need = gj, need - 1
        if gj < total[j] then m = m + 1; act[m] = j end
      end
      na = m
    end
    local nk = #take
    local lwk, lwd, lwp, lwn = {}, {}, {}, 0
    for j = 1, nw do
      local g, d, t, gj = win[j], dueG[win[j]] or none, tails[j], got[j]
      local nt, nd = #t, #d
      local fromList = gj < nt and gj or nt
      for i = 1, fromList do nk = nk + 1; take[nk] = t[i]; tgr[nk] = g end
      local fromDue = gj - fromList
      for i = 1, fromDue do nk = nk + 1; take[nk] = d[i]; tgr[nk] = g end
      local left = (more[j] and 1 or 0) + nt - fromList + nd - fromDue
      lrem = lrem + left
      -- A lane left with work: its untaken pops back to its RPOP end, its untaken due jobs to
      -- the other. (A lane that ends empty is gone already: Valkey drops an emptied list.)
      if nt > fromList or nd > fromDue then
        local back, dl = false, false
        if nt > fromList then
          back = {}
          for i = nt, fromList + 1, -1 do back[#back + 1] = t[i] end
        end
        if nd > fromDue then
          dl = {}
          for i = fromDue + 1, nd do dl[#dl + 1] = d[i] end
        end
        lwn = lwn + 1
        lwk[lwn], lwd[lwn], lwp[lwn] = lk[j], dl, back
      end
      -- Back into the ring: a served lane that has work left, a lane from outside the ring
      -- (jobs without a group, or a group whose due jobs land in an empty list).
      if left > 0 and (inWin[g] == true or wholeRing or (nt == 0 and not more[j])) then ringPush[#ringPush + 1] = g end
    end
    st.lwk, st.lwd, st.lwp, st.lwn = lwk, lwd, lwp, lwn
  end
  st.lrem, st.ringPop, st.need = lrem, ringPop, need
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
-- Claim's sliding-window rate limit (docs/protocol.md §5, "Rate limits"): at most max jobs claimed
-- in any window of ms on the server clock, all consumers together. The log of a limit is a zset
-- (`rlog` for the queue, `grlog:<g>` for a lane): one entry per claim that took jobs, scored
-- with its server ms, member `<cum>:<k>` (k: the jobs it took; cum: the jobs logged up to and
-- including it, 16 digits with leading zeros, so members are unique and entries of one ms sort
-- in claim order, as a zset orders equal scores by member; the jobs in the window are the
-- newest entry's cum less the oldest in-window entry's cum, plus that entry's k). A claim counts the jobs of the
-- window (now - ms, now]: two reads whatever the log holds (the oldest entry in the window,
-- the newest entry), and its write drops the entries that left the window. The key's PX is
-- the window, so an idle limit leaves nothing behind.
-- slide_read answers { key, ms, now, used, cum (the newest entry's), first (the oldest
-- in-window entry's ms, nil when none) }; a member that is not `<cum>:<k>` is EMQ_WRONGTYPE.
local function slide_read(key, ms, now)
  local sw = { key = key, ms = ms, now = now, used = 0, cum = 0, first = nil }
  local f = checked(redis.pcall('ZRANGE', key, '(' .. (now - ms), '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES'), key)
  if f[1] then
    local c1, k1 = string.match(f[1], '^(%d+):(%d+)$')
    local last = redis.call('ZRANGE', key, -1, -1)[1]
    local cl = last and string.match(last, '^(%d+):%d+$')
    if not c1 or not cl then fail('WRONGTYPE', key .. ' holds a member that is not "<cum>:<k>"') end
    sw.cum, sw.first = tonumber(cl), tonumber(f[2])
    sw.used = sw.cum - tonumber(c1) + tonumber(k1)
  end
  return sw
end
-- The ms until the window has room again once it is used up: the oldest in-window entry leaves
-- it then (a log that had none: the entry this claim adds, a whole window away).
local function slide_rest(sw)
  return sw.first and math.max(1, sw.first + sw.ms - sw.now) or sw.ms
end
-- Logs a claim of k > 0 jobs: its entry, the expired entries dropped, the key's PX renewed.
local function slide_count(sw, k)
  redis.call('ZADD', sw.key, sw.now, string.format('%016d:%d', sw.cum + k, k))
  redis.call('ZREMRANGEBYSCORE', sw.key, '-inf', sw.now - sw.ms)
  redis.call('PEXPIRE', sw.key, sw.ms)
end
-- Claim's group policy of fair lanes (docs/protocol.md §5, "Group policy"): the stored policy
-- (meta `gpol`, written by policy.lua; parsed by policy_groups, lua/lib/policy-text.lua), read in
-- lanes mode only.
-- Level 0 under a group policy. The ring is walked from its RPOP end: a group at its cap (its
-- live members of `gactive:<g>`, ids still in `active`) or out of its rate window (`grate:<g>`)
-- is blocked: it goes to the back of the ring without a job and its work does not count as
-- remaining (a rate-blocked one sets the wait to its window's rest). The others form the window,
-- until their turns cover need: a lane's turn is up to its weight w in jobs (less what an earlier
-- claim took of the front lane's turn, `gturn` = "<taken> <lane>"), served in ring order, in
-- rounds when the window is the whole ring. A lane whose turn was cut short by need, in whichever
-- round, stays at the front (what it had of that turn in `gturn`) and the lanes after it keep
-- their place; the lanes served before it go to the back. So claims of any size deal the turns
-- claims of one job deal, and a lane's share is w/W at any claim size and concurrency. A paused
-- lane (meta `gpaused`, the set `paused`) is blocked like a lane at its cap. At most 1000 ring
-- entries are examined per claim. Reads only (no pop): the writes are st.gp's, made by
-- claim_lanes_write.
local function claim_policy_lanes(st, KEYS, b, pol, paused)
  local ringKey, need, dueG, take, tlv, tgr, ops, laneKey = st.ringKey, st.need, st.dueG, st.take, st.tlv, st.tgr, st.ops, st.laneKey
  local lrem, ringPush = st.lrem, st.ringPush
  local gp = { stale = {}, adds = {}, rate = {}, wait = nil, turn = false, turnKey = b .. 'gturn' }
  st.gp = gp
  local turn = checked(redis.pcall('GET', gp.turnKey), gp.turnKey)
  gp.turnWas = turn
  local tUsed, tG = 0, nil
  if turn then
    local u, g = string.match(turn, '^(%d+) (.*)$')
    tUsed, tG = tonumber(u) or 0, g
  end
  local llen = checked(redis.pcall('LLEN', ringKey), ringKey)
  -- Phase 1: walk the ring, policy only (no list read): blocked lanes, then the window.
  local win, seen, cover, pos = {}, {}, 0, 0
  local function settings(g)
    if g == '' then return 0, 1, 0, 0, false end
    local s = pol[g] or pol['*']
    return s[1], s[2], s[3], s[4], s[5]
  end
  -- A lane's room: how many more jobs it may start now (nil = unlimited), and why it is 0.
  local function room(g)
    local cap, w, rmax, rms, sliding = settings(g)
    local allow, why, rest = nil, nil, nil
    if paused and paused[g] then return 0, 'paused', w, nil end
    if cap > 0 then
      local key = b .. 'gactive:' .. g
      local m = checked(redis.pcall('SMEMBERS', key), key)
      local live = 0
      for i = 1, #m do
        local sc = redis.pcall('ZSCORE', KEYS[4], m[i])
        if type(sc) == 'table' and sc.err then checked(sc, KEYS[4]) end
        if sc then live = live + 1 else gp.stale[#gp.stale + 1] = { key, m[i] } end
      end
      allow, why = math.max(0, cap - live), 'cap'
    end
    if rmax > 0 then
      local used, left, sw
      if sliding then -- (lua/lib/claim-slide.lua: the lane's log `grlog:<g>`)
        sw = slide_read(b .. 'grlog:' .. g, rms, now_ms())
        used, left = sw.used, slide_rest(sw)
      else
        local key = b .. 'grate:' .. g
        used = tonumber(checked(redis.pcall('GET', key), key)) or 0
        left = used > 0 and redis.call('PTTL', key) or -1
        if left < 0 then used, left = 0, rms end -- no window open: a new one of rms
      end
      if not allow or rmax - used < allow then allow, why = math.max(0, rmax - used), 'rate' end
      gp.rate[g] = { used, rms, left, nil, sw }
      rest = left
    end
    return allow, why, w, rest
  end
  while cover < need and pos < llen and pos < 1000 do
    local c = math.min(need - cover, llen - pos, 1000 - pos)
    local chunk = checked(redis.pcall('LRANGE', ringKey, -(pos + c), -(pos + 1)), ringKey)
    for i = #chunk, 1, -1 do
      local g = chunk[i]
      if cover >= need then break end
      pos = pos + 1
      if not seen[g] then -- a repeated entry is a stale hint: dropped
        seen[g] = true
        local allow, why, w, rest = room(g)
        if allow == 0 then
          ringPush[#ringPush + 1] = { g, pos } -- blocked: to the back, its work not remaining
          if why == 'rate' and (not gp.wait or rest < gp.wait) then gp.wait = math.max(1, rest) end
        else
          local q = w
          if #win == 0 and pos == 1 and g == tG then q = math.max(1, w - tUsed) end
          win[#win + 1] = { g = g, w = w, q = q, allow = allow or 1000000, why = why, rest = rest, at = pos, used = (q < w) and tUsed or 0 }
          cover = cover + math.min(q, allow or q)
        end
      end
    end
  end
  local whole = pos >= llen
  -- The rounds: enough for the ring's lanes to cover need (the jobs without a group, outside the
  -- ring, are not counted: `pending` may be empty, and counting it would stop short of need).
  local rounds = (whole and cover > 0) and math.ceil(need / cover) or 1
  if whole and not seen[''] and cover < need then
    win[#win + 1] = { g = '', w = 1, q = 1, allow = 1000000, at = pos + 1, used = 0, outside = true }
    if cover == 0 then rounds = need end
  end
  if not whole then lrem = lrem + 1 end -- lanes beyond this claim's walk
  -- Phase 2: one read per window lane of the most it may give (+1 tells "more").
  for j = 1, #win do
    local L = win[j]
    L.d = dueG[L.g] or {}
    L.cap = math.min(L.allow, L.q + L.w * (rounds - 1), need)
    local key = laneKey(L.g)
    local t = checked(redis.pcall('LRANGE', key, -(L.cap + 1), -1), key)
    L.t, L.more, L.got = t, #t > L.cap, 0
    L.avail = L.more and L.cap or math.min(L.cap, #t + #L.d)
  end
  -- Phase 3: rounds in window order, each lane up to its turn (then its weight). The lane
  -- served last remembers its last turn: the jobs it had of it (`taken`, counting what an
  -- earlier claim took of a continued turn) and whether need cut it short, in whichever round.
  local last = nil
  for r = 1, rounds do
    local moved = false
    for j = 1, #win do
      if need == 0 then break end
      local L = win[j]
      local quota = r == 1 and L.q or L.w
      local give = math.min(quota, L.avail - L.got, need)
      if give > 0 then
        L.got, need, moved, last = L.got + give, need - give, true, L
        L.cut, L.taken = give < quota, (r == 1 and L.used or 0) + give
      end
    end
    if need == 0 or not moved then break end
  end
  -- Phase 4: the jobs taken, the lists' pops, the ring and the turn. When need ran out, the
  -- ring entries after the last lane served keep their place (and that lane too when its
  -- turn was cut short: it stays at the front, the jobs it had of its turn in `gturn`), so the
  -- next claim goes on where this one stopped whatever its size: over claims of any n, the
  -- lanes are dealt the sequence of turns that claims of one job would deal.
  local popTo = pos
  if need == 0 and last and not last.outside then
    popTo = (last.cut and (last.more or #last.t + #last.d > last.got) and last.got < last.allow) and last.at - 1 or last.at
    if popTo < last.at then gp.turn = last.taken .. ' ' .. last.g end
  end
  local back = {} -- lanes to the back of the ring, in ring order: { lane, its walk position }
  for x = 1, #ringPush do back[#back + 1] = ringPush[x] end -- (blocked, from phase 1)
  ringPush = {}
  for j = 1, #win do
    local L = win[j]
    local t, d = L.t, L.d
    local fromList = math.min(L.got, #t)
    for i = #t, #t - fromList + 1, -1 do take[#take + 1] = t[i]; tlv[#take] = 0; tgr[#take] = L.g end
    for i = 1, L.got - fromList do take[#take + 1] = d[i]; tlv[#take] = 0; tgr[#take] = L.g end
    if L.got > 0 or #d > 0 then ops[#ops + 1] = { laneKey(L.g), 0, d, L.got, false } end
    if L.got > 0 and settings(L.g) > 0 then
      local ids = {}
      for i = #take - L.got + 1, #take do ids[#ids + 1] = take[i] end
      gp.adds[#gp.adds + 1] = { b .. 'gactive:' .. L.g, ids }
    end
    local rs = gp.rate[L.g]
    if rs then rs[4] = L.got end
    local has = L.more or #t + #d > L.got
    local blocked = has and L.got >= L.allow
    if has and not blocked then lrem = lrem + 1 end
    if blocked and L.why == 'rate' and (not gp.wait or rs[3] < gp.wait) then gp.wait = math.max(1, rs[3]) end
    if has and (L.at <= popTo or L.outside) then back[#back + 1] = { L.g, L.at, L.outside } end
  end
  table.sort(back, function(x, y) return x[2] < y[2] end)
  for x = 1, #back do
    if back[x][2] <= popTo or back[x][3] then ringPush[#ringPush + 1] = back[x][1] end
  end
  -- Due jobs of lanes outside the window: an empty list joins the ring as they land in it.
  for g, d in pairs(dueG) do
    local inWin = false
    for j = 1, #win do if win[j].g == g then inWin = true end end
    if not inWin and #d > 0 then
      local key = laneKey(g)
      local len = checked(redis.pcall('LLEN', key), key)
      ops[#ops + 1] = { key, 0, d, 0, false }
      if not seen[g] then -- (a blocked lane was walked: its place is kept or it went back)
        lrem = lrem + 1
        if len == 0 then ringPush[#ringPush + 1] = g end
      end
    end
  end
  st.lrem, st.ringPop, st.ringPush, st.need = lrem, popTo, ringPush, need
end
-- Claim in lanes mode (meta `lanes` set by enqueue once a job carried a priority or a group).
-- Priorities (docs/protocol.md §2): one list per level 1..9 (`<pending>:<p>`), 0 is `pending`
-- (or, with fair lanes, its groups' lists); `levels` holds the levels 1..9 whose list has jobs.
-- Claimed highest level first, FIFO within a level: at most ten lists read, whatever the backlog.
-- A due job joins the list of its level (its row's `prio` / `group` for a retry, else the third
-- field of its opts: a digit is a priority, `g:<name>` a group).
-- claim_lanes answers the lanes state st: take (the ids to claim, in order), tlv (the level of
-- each id taken from a level), tgr (each id's group, '' = none), lrem (how many jobs or lanes
-- remain), and the writes claim_lanes_write makes: ops (per list { key, level, due ids to
-- push, count to pop, levels-set command or false }), the ring's pops and pushes, the level-0
-- lane writes (lwk/lwd/lwp/lwn: key, due ids for its LPUSH end, popped ids back to its RPOP end)
-- and gp (the group policy's writes).
local function claim_lanes(KEYS, b, n, due, dueRow, pol)
  local st = { take = {}, tlv = {}, tgr = {}, ops = {}, lrem = 0, ringPush = {}, ringPop = 0, lwn = 0,
    levels = b .. 'levels', ringKey = b .. 'groups', b = b }
  st.laneKey = function(g) return g == '' and KEYS[2] or b .. 'group:' .. g end
  local take, tlv, ops, levels, prefix = st.take, st.tlv, st.ops, st.levels, KEYS[8]
  local present = checked(redis.pcall('ZRANGE', levels, 0, -1), levels)
  local has = {}
  for i = 1, #present do has[tonumber(present[i])] = true end
  -- The lane of each due job.
  local dueBy, dueG = {}, {}
  for i = 1, #due do
    local p, g = nil, nil
    if dueRow[i] then
      local r = redis.call('HMGET', prefix .. due[i], 'prio', 'group')
      p, g = r[1], r[2]
    end
    if not p and not g then
      local o = checked(redis.pcall('HGET', KEYS[7], due[i]), KEYS[7])
      local third = o and string.match(o, '^[^|]*|[^|]*|([^|]+)')
      if third then
        p = string.match(third, '^%d$')
        g = string.match(third, '^g:(.+)$')
      end
    end
    local d
    if g then
      d = dueG[g] or {}
      dueG[g] = d
    else
      p = tonumber(p) or 0
      if p == 0 then d = dueG[''] or {}; dueG[''] = d else d = dueBy[p] or {}; dueBy[p] = d end
    end
    d[#d + 1] = due[i]
  end
  local need, lrem, none = n, 0, {}
  for L = (#present > 0 or next(dueBy)) and 9 or 0, 1, -1 do -- no level holds ids: nothing to read
    local d = dueBy[L] or none
    if has[L] or #d > 0 then
      local key = KEYS[2] .. ':' .. L
      local left
      if need > 0 then
        local t = checked(redis.pcall('LRANGE', key, -(need + 1), -1), key)
        local fromList = math.min(need, #t)
        for i = #t, #t - fromList + 1, -1 do take[#take + 1] = t[i]; tlv[#take] = L end
        local fromDue = math.min(need - fromList, #d)
        for i = 1, fromDue do take[#take + 1] = d[i]; tlv[#take] = L end
        need = need - fromList - fromDue
        left = #t - fromList + #d - fromDue
        ops[#ops + 1] = { key, L, d, fromList + fromDue, false }
      else
        left = checked(redis.pcall('LLEN', key), key) + #d
        if #d > 0 then ops[#ops + 1] = { key, L, d, 0, false } end
      end
      lrem = lrem + left
      local op = ops[#ops]
      if op and op[2] == L then
        if left == 0 and has[L] then op[5] = 'ZREM' elseif left > 0 and not has[L] then op[5] = 'ZADD' end
      end
    end
  end
  st.need, st.lrem, st.dueG = need, lrem, dueG
  -- Level 0: fair lanes, under a group policy or not. Paused lanes (meta `gpaused`, policy.lua's
  -- `pause`; part of the call's one meta read) are blocked lanes of the policy walk: with
  -- any lane paused, a queue without a group policy is claimed under the neutral one (every lane
  -- weight 1, no cap or limit: the same rotation).
  local paused = need > 0 and policy_paused(queue_meta(KEYS[1]).gpaused)
  if paused then claim_policy_lanes(st, KEYS, b, pol or { ['*'] = { 0, 1, 0, 0, false } }, paused)
  elseif pol then claim_policy_lanes(st, KEYS, b, pol) else claim_fair_lanes(st, KEYS, b) end
  return st
end
-- The lanes' writes (after the claim's ZADD to `active` and the promotion's ZREM).
local function claim_lanes_write(st, KEYS)
  -- A lane list: its due ids pushed (in slices of 1000), then its `pop` oldest ids removed
  -- (LTRIM, not RPOP with a count: the same list, without the removed ids as a reply table).
  local function land(key, d, pop)
    if d then for i = 1, #d, 1000 do redis.call('LPUSH', key, unpack(d, i, math.min(i + 999, #d))) end end
    if pop == 1 then redis.call('RPOP', key) elseif pop > 1 then redis.call('LTRIM', key, 0, -(pop + 1)) end
  end
  local ops, levels = st.ops, st.levels
  for o = 1, #ops do
    local key, L, d, pop, lv = ops[o][1], ops[o][2], ops[o][3], ops[o][4], ops[o][5]
    land(key, #d > 0 and d, pop)
    if lv == 'ZADD' then redis.call('ZADD', levels, L, L) elseif lv == 'ZREM' then redis.call('ZREM', levels, L) end
  end
  for o = 1, st.lwn do
    local d, back = st.lwd[o], st.lwp[o]
    if d then land(st.lwk[o], d, 0) end
    if back then redis.call('RPUSH', st.lwk[o], unpack(back)) end
  end
  if st.ringPop > 0 then redis.call('LTRIM', st.ringKey, 0, -(st.ringPop + 1)) end
  if #st.ringPush > 0 then redis.call('LPUSH', st.ringKey, unpack(st.ringPush)) end
  local gp = st.gp
  if gp then
    -- Group policy: live counts of capped groups, rate windows, the front lane's turn.
    for i = 1, #gp.stale do redis.call('SREM', gp.stale[i][1], gp.stale[i][2]) end
    for i = 1, #gp.adds do redis.call('SADD', gp.adds[i][1], unpack(gp.adds[i][2])) end
    for g, rs in pairs(gp.rate) do
      if rs[4] and rs[4] > 0 then
        if rs[5] then slide_count(rs[5], rs[4])
        elseif rs[1] == 0 then redis.call('SET', st.b .. 'grate:' .. g, rs[4], 'PX', rs[2]) else redis.call('INCRBY', st.b .. 'grate:' .. g, rs[4]) end
      end
    end
    if gp.turn then redis.call('SET', gp.turnKey, gp.turn) elseif gp.turnWas then redis.call('DEL', gp.turnKey) end
  end
end
-- A parked consumer's claim (claim's KEYS[10..11] `parked`, `inbox:<tag>`, ARGV[5] the
-- registration's ms; docs/protocol.md §5, "Parked consumers"). claim_park checks the
-- registration's inputs and its keys' types before anything is written; claim_park_end, the
-- claim's last write, registers the consumer or ends its registration.
local function claim_park(KEYS, ARGV, b)
  local ib = b .. 'inbox:'
  local tag = string.sub(KEYS[11], #ib + 1)
  if KEYS[10] ~= b .. 'parked' or string.sub(KEYS[11], 1, #ib) ~= ib or #tag == 0 or #tag > 32 or string.find(tag, '[^A-Za-z0-9]') then
    fail('BAD_ARG', 'KEYS[10..11] must be the keys parked, inbox:<tag> (tag 1..32 of A-Za-z0-9) of the queue of KEYS[1]')
  end
  local ttl = need_int(ARGV[5], 1, 86400000, 'the registration ms')
  local kind = redis.call('TYPE', KEYS[10])['ok']
  if kind ~= 'none' and kind ~= 'zset' then fail('WRONGTYPE', KEYS[10] .. ' is a ' .. kind .. ', not a zset') end
  local waiting = redis.pcall('LLEN', KEYS[11])
  if type(waiting) ~= 'number' then fail('WRONGTYPE', KEYS[11] .. ' is not a list') end
  return { ttl = ttl, member = ARGV[3] .. ':' .. tag, kind = kind, waiting = waiting }
end
-- The parked consumer registers while it has a slot left (it claimed fewer than it asked for)
-- and no lease waits in its inbox (so an enqueue leases it at most one job, within its slots).
-- Else an earlier registration ends, and an empty inbox gets an empty entry (PX the
-- registration's ms), so that the consumer's BLPOP returns at once by its inbox: a chain
-- wake-up marker this call pushed stays on `wake` for the other consumers.
local function claim_park_end(park, KEYS, slot, now)
  if slot and park.waiting == 0 then
    if park.kind == 'zset' then redis.call('ZREMRANGEBYSCORE', KEYS[10], '-inf', '(' .. now) end
    redis.call('ZADD', KEYS[10], now + park.ttl, park.member)
  else
    if park.kind == 'zset' then redis.call('ZREM', KEYS[10], park.member) end
    if park.waiting == 0 then
      redis.call('RPUSH', KEYS[11], '')
      redis.call('PEXPIRE', KEYS[11], park.ttl)
    end
  end
end
-- Claim's queue rate limit (meta `rate` = "<max> <ms>" or "<max> <ms> sliding", written by
-- policy.lua: at most max jobs per ms, all consumers together), on the server clock. Fixed (the
-- default): a window counted in `emq:{q}:rate` (a string with a PX of the window), opened by the
-- claim that takes its first job; up to 2 x max may start across a window's end. Sliding: at most
-- max in any ms-long span, logged in `emq:{q}:rlog` (lua/lib/claim-slide.lua). A claim takes at
-- most what the window has left; a limited claim's wait reply is the ms until it has room again.
-- claim_rate reads the window: { max, ms, key, used, left (fixed: its PTTL, 0 when no window is
-- open), sw (sliding: the log read) }.
local function claim_rate(max, ms, b, sliding)
  if sliding then
    local sw = slide_read(b .. 'rlog', ms, now_ms())
    return { max = max, ms = ms, used = sw.used, left = sw.first and slide_rest(sw) or 0, sw = sw }
  end
  local rt = { key = b .. 'rate', used = 0, left = 0, max = max, ms = ms }
  rt.used = tonumber(checked(redis.pcall('GET', rt.key), rt.key)) or 0
  if rt.used > 0 then rt.left = redis.call('PTTL', rt.key) end
  if rt.left < 0 then rt.used, rt.left = 0, 0 end -- no PX: a new window
  return rt
end
-- Counts the jobs claimed in the window (fixed: opening it with its PX when none was open).
local function claim_rate_count(rt, k)
  if rt.sw then slide_count(rt.sw, k)
  elseif rt.used == 0 then redis.call('SET', rt.key, k, 'PX', rt.ms) else redis.call('INCRBY', rt.key, k) end
end
-- Claim's writes of rows that are not the plain claim's one HSET.
-- claim_row: the row of a claimed job with a level, a group or its own options (opts
-- "<max attempts>|<backoff>|<lane>|<extras>", moved into its row at its first claim: `max`,
-- `backoff` and extras as `x`; with `started` (attempt starts recorded), `started`). Answers the
-- extras it moved (nil when none).
local function claim_row(row, token, a, L, G, o, started)
  local r = { 'status', 'active', 'token', token, 'attempts', a }
  if started then r[#r + 1] = 'started'; r[#r + 1] = started end
  if L and L > 0 then r[#r + 1] = 'prio'; r[#r + 1] = L end
  if G then r[#r + 1] = 'group'; r[#r + 1] = G end
  local maxA, backoff = string.match(o or '', '^(%d*)|([^|]*)')
  if maxA and maxA ~= '' then r[#r + 1] = 'max'; r[#r + 1] = maxA end
  if backoff and backoff ~= '' then r[#r + 1] = 'backoff'; r[#r + 1] = backoff end
  local x = o and string.match(o, '^[^|]*|[^|]*|[^|]*|(.+)$')
  if x then r[#r + 1] = 'x'; r[#r + 1] = x end
  redis.call('HSET', row, unpack(r))
  return x
end
-- Ghosts popped (cancel.lua left the id pending, its payload in its row and "" in `data`): the
-- payload back to `data` (or, when its row left the cancelled retention, the "" dropped), one
-- ghost fewer in meta `ghosts`. ghosts: { { id, payload or false }, ... }.
local function claim_ghosts(KEYS, ghosts)
  for i = 1, #ghosts do
    local id, p = ghosts[i][1], ghosts[i][2]
    if p then
      redis.call('HSET', KEYS[6], id, p)
      redis.call('HDEL', KEYS[8] .. id, 'payload')
    else
      redis.call('HDEL', KEYS[6], id)
    end
  end
  redis.call('HINCRBY', KEYS[1], 'ghosts', -#ghosts)
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
need((#KEYS == 9 and #ARGV >= 4 and #ARGV <= 6) or (#KEYS == 11 and #ARGV >= 5 and #ARGV <= 7),
  'expected 9 keys and 4 to 6 arguments, or 11 keys and 5 to 7 arguments (a parked registration)')
-- The optional last argument (protocol v2, additive): `fair` claims fair lanes under the default
-- policy (every lane weight 1) when none is stored; absent, "" or "0" keeps the old rotation. (A
-- word, never a number: a claim that passes a limit, e.g. 1, stays refused, as rate.json records.)
local fairArg = ARGV[#KEYS == 9 and 5 or 6]
need(fairArg == nil or fairArg == '' or fairArg == '0' or fairArg == 'fair', 'default-fair must be "", "0" or "fair"')
local defaultFair = fairArg == 'fair'
local stampArg = ARGV[#KEYS == 9 and 6 or 7]
need(stampArg == nil or stampArg == '' or stampArg == '0' or stampArg == '1', 'stamp must be "", "0" or "1"')
local ANCHOR = '~ EchoMQ anchor: keeps this zset in skiplist encoding; score +inf, never a job ~'
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'pending', 'scheduled', 'active', 'wake', 'data', 'opts', 'job:', 'events' })
local park = #KEYS == 11 and claim_park(KEYS, ARGV, b) -- (its keys' types read here, before any write)
-- Fast path (the valid call): one pattern over the three joined by spaces, at most 16 digits
-- each (as int()), coercion by `+ 0` and the ranges: exactly what int() accepts, for about a
-- third of the server instructions; a miss falls back to need_int() per argument.
local n, lease, promote
if #ARGV[2] < 17 and #ARGV[3] < 17 and #ARGV[4] < 17 and string.find(ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4], '^%d+ %d+ %d+$') then
  n, lease, promote = ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
end
if not (n and n <= 1000 and lease >= 1 and lease <= 86400000 and promote <= 10000) then
  n = need_int(ARGV[2], 0, 1000, 'claim count')
  lease = need_int(ARGV[3], 1, 86400000, 'lease (ms)')
  promote = need_int(ARGV[4], 0, 10000, 'promote limit')
end

-- Reads first: every key this call writes is read before anything is written, so a key of the
-- wrong type is refused with nothing changed. (A reply is tested inline: a read that succeeds
-- costs no call of checked().)
local meta = queue_meta(KEYS[1])
-- Paused: claim nothing, promote nothing; the consumer blocks on `wake` (resume pushes a marker).
if meta.paused == '1' then return { -2, 6 } end
if meta.token and not string.match(meta.token, '^%d+$') then fail('WRONGTYPE', KEYS[1] .. ' field token is not an integer') end
-- The stored policy (policy.lua): a queue without one reads nothing more.
local rate, pol = nil, nil
if meta.rate then
  local rmax, rms, sliding = policy_rate_text(meta.rate)
  if not rmax then fail('WRONGTYPE', KEYS[1] .. ' field rate is not "<max 1..1000000> <ms 1..86400000>[ sliding]"') end
  rate = claim_rate(rmax, rms, b, sliding)
  n = math.min(n, math.max(0, rate.max - rate.used))
end
if meta.gpol then pol = policy_groups(meta.gpol) end
if park and (rate or pol) then park = nil end -- a limited queue: a plain claim, no registration
local elog = meta.elog
-- Lanes (priorities, groups): a queue without them runs the plain path, command for command.
local lanes = meta.lanes == '1'
local xtra = meta.xtra == '1' -- extras (enqueue sets it): a retried job's are in its row
local stamp = meta.stamp == '1' or stampArg == '1' -- rows get `started` (attempt history)
local now = now_ms()
local prefix = KEYS[8]
local due = {}
if promote > 0 then
  due = redis.pcall('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, promote)
  if due.err then checked(due, KEYS[3]) end
end
-- A retried job has a row (its status goes back to pending); a delayed job gets one at its first claim.
local dueRow = #due > 0 and {} -- (no table when nothing is due: the common claim)
for i = 1, #due do
  dueRow[i] = checked(redis.pcall('HLEN', prefix .. due[i]), prefix .. due[i]) > 0
end
-- plen: the pending ids seen (n + 1 means "more than n"); take: the ids this call pops, in pop
-- order; ln: the lanes state (lanes mode only: the plain path builds no table it does not use).
local plen, tail, k, take, ln = 0, nil, 0, nil, nil
if lanes then
  -- No stored policy and the default asked for: the policy walk with every lane weight 1 (the
  -- path of a declared `lanes: {}`), so claims of any size deal the turns claims of one deal.
  ln = claim_lanes(KEYS, b, n, due, dueRow, pol or (defaultFair and { ['*'] = { 0, 1, 0, 0, false } }) or nil)
  take = ln.take
  k = #take
else
  -- The oldest n + 1 pending ids (one more than wanted tells whether more remain), or, when
  -- nothing is claimed, the length alone.
  take = {}
  if n > 0 then
    tail = redis.pcall('LRANGE', KEYS[2], -(n + 1), -1)
    if tail.err then checked(tail, KEYS[2]) end
    plen = #tail
  else
    plen = redis.pcall('LLEN', KEYS[2])
    if type(plen) == 'table' then checked(plen, KEYS[2]) end
  end
  -- The ids this call pops, in pop order: the tail of pending (oldest first), then the promoted
  -- jobs (which join the head of pending) in run-at order.
  k = math.min(n, plen + #due)
  if k > 0 then
    local fromPending = math.min(k, plen)
    for i = #tail, #tail - fromPending + 1, -1 do take[#take + 1] = tail[i] end
    for i = 1, k - fromPending do take[#take + 1] = due[i] end
  end
end
local hasOpts = false -- most queues never set per-job options
if k > 0 then hasOpts = checked(redis.pcall('HLEN', KEYS[7]), KEYS[7]) > 0 end
-- The jobs to claim, as parallel arrays (no table per job): id, row, payload, attempt; own
-- options (jopt) and extras (jx, once meta `xtra` is set) only when they can be used, ghosts on
-- the first one (each table costs an allocation and GC work on the server).
local jid, jrow, jpay, jatt, att = {}, {}, {}, {}, {}
local jfl, jflow = nil, nil -- flow flags per id and per claimed job, only once one has one
local jopt, jx, ghosts = hasOpts and {}, xtra and {}, nil
local tlv, tgr = ln and ln.tlv, ln and ln.tgr
local jlv, jgr = tlv and {}, tgr and {} -- lanes mode: each claimed job's level and group
local pays = {} -- every payload in one read
if #take > 0 then
  pays = redis.pcall('HMGET', KEYS[6], unpack(take))
  if pays.err then checked(pays, KEYS[6]) end
end
-- First claims (the common case) have no row yet: one EXISTS over the rows of two or more jobs
-- replaces a read per row. A key that does not exist has no wrong type; when any row exists,
-- each is read (and so type-checked) below.
local trow, fresh = nil, false
if #take > 1 then
  trow = {}
  for i = 1, #take do trow[i] = prefix .. take[i] end
  fresh = redis.call('EXISTS', unpack(trow)) == 0
end
for i = 1, #take do
  local id = take[i]
  local row = trow and trow[i] or prefix .. id
  local payload = pays[i]
  if payload == '' then
      local p = redis.pcall('HGET', row, 'payload')
    if type(p) == 'table' then checked(p, row) end
    ghosts = ghosts or {}
    ghosts[#ghosts + 1] = { id, p }
    payload = false
  end
  if payload then -- data deleted by hand: the id is dropped, no row is half-created
    local a, x, f = att[id], nil, nil
    if a then
      f = jfl and jfl[id]
    elseif fresh then
      a = 0
    else
      -- Its attempts, flow fields (`parent`, `deps`) and, once meta `xtra` is set, extras.
      local cur = xtra and redis.pcall('HMGET', row, 'attempts', 'parent', 'deps', 'x') or redis.pcall('HMGET', row, 'attempts', 'parent', 'deps')
      if cur.err then checked(cur, row) end
      a, x = tonumber(cur[1]) or 0, cur[4]
      f = cur[2] and (cur[3] and 'pc' or 'c') or (cur[3] and 'p') or nil
    end
    a = a + 1
    att[id] = a
    local j = #jid + 1
    jid[j], jrow[j], jpay[j], jatt[j] = id, row, payload, a
    if f then jfl = jfl or {}; jflow = jflow or {}; jfl[id], jflow[j] = f, f end
    if jopt then jopt[j] = false end
    if jx then jx[j] = x or '' end
    if lanes then
      local lv = tlv[i] -- (set for the jobs of a level only: fair lanes write no entry per job)
      if lv then jlv[j] = lv end
      jgr[j] = tgr[i]
    end
    if a == 1 and hasOpts then jopt[j] = redis.call('HGET', KEYS[7], id) end
  end
end
local remaining = lanes and ln.lrem or plen + #due - k
local wakeLen, nxt = 1, nil
if remaining > 0 then
  if #jid > 0 then
    wakeLen = redis.pcall('LLEN', KEYS[5])
    if type(wakeLen) == 'table' then checked(wakeLen, KEYS[5]) end
  end
else
  -- The earliest scheduled job that this call does not promote.
  nxt = redis.pcall('ZRANGE', KEYS[3], #due, #due, 'WITHSCORES')
  if nxt.err then checked(nxt, KEYS[3]) end
end
if elog > 0 and #jid > 0 then need_type(KEYS[9], 'stream') end

-- Writes. The first one is the type check of `active`: a write refused with WRONGTYPE changes
-- nothing. Promotion goes in slices of 1000 ids (a command takes a bounded number of arguments).
local deadline = now + lease
if #jid > 0 then
  -- The anchor (docs/protocol.md §2): a member longer than zset-max-listpack-value keeps `active`
  -- a skiplist for good (an insert O(log n), not a listpack scan: 8x the server time at 50 jobs).
  local zargs = { 'inf', ANCHOR }
  for i = 1, #jid do
    zargs[2 * i + 1] = deadline
    zargs[2 * i + 2] = jid[i]
  end
  local z = redis.pcall('ZADD', KEYS[4], unpack(zargs))
  if type(z) == 'table' then checked(z, KEYS[4]) end
end
for i = 1, #due, 1000 do
  local j = math.min(i + 999, #due)
  redis.call('ZREM', KEYS[3], unpack(due, i, j))
  if not lanes then redis.call('LPUSH', KEYS[2], unpack(due, i, j)) end
end
for i = 1, #due do
  if dueRow[i] then redis.call('HSET', prefix .. due[i], 'status', 'pending') end
end
if lanes then claim_lanes_write(ln, KEYS)
elseif k > 0 then redis.call('LTRIM', KEYS[2], 0, -(k + 1)) end -- the k oldest (RPOP without its reply table)
if ghosts then claim_ghosts(KEYS, ghosts) end
local out = { -1, 6 } -- wait, then the width: the fields per job
if #jid > 0 then
  local last = redis.call('HINCRBY', KEYS[1], 'token', #jid)
  local moved = hasOpts and {}
  for i = 1, #jid do
    local id, a, o, L, G = jid[i], jatt[i], jopt and jopt[i], lanes and jlv[i], lanes and jgr[i]
    local token = last - #jid + i
    if G == '' then G = nil end
    if G and not o then -- a job of a group (fair lanes), without its own options: one HSET, no table
      if stamp then redis.call('HSET', jrow[i], 'status', 'active', 'token', token, 'attempts', a, 'group', G, 'started', now)
      else redis.call('HSET', jrow[i], 'status', 'active', 'token', token, 'attempts', a, 'group', G) end
    elseif o or (L and L > 0) or G then
      local x = claim_row(jrow[i], token, a, L, G, o, stamp and now)
      if x then jx = jx or {}; jx[i] = x end
      if o then moved[#moved + 1] = id end
    elseif stamp then
      redis.call('HSET', jrow[i], 'status', 'active', 'token', token, 'attempts', a, 'started', now)
    else
      redis.call('HSET', jrow[i], 'status', 'active', 'token', token, 'attempts', a)
    end
    out[6 * i - 3] = id
    out[6 * i - 2] = token
    out[6 * i - 1] = a
    out[6 * i] = jpay[i]
    out[6 * i + 1] = jx and jx[i] or ''
    out[6 * i + 2] = jflow and jflow[i] or ''
  end
  if moved and #moved > 0 then redis.call('HDEL', KEYS[7], unpack(moved)) end
  emit(KEYS[9], elog, 'claimed', jid)
end
if rate and #jid > 0 then claim_rate_count(rate, #jid) end
if remaining > 0 and rate and rate.used + #jid >= rate.max then
  -- Limited: the consumer waits until the window ends (no chain wake-up, no busy polling).
  out[1] = math.max(1, rate.used == 0 and rate.ms or rate.left)
elseif remaining > 0 then
  -- More work remains: make sure another idle consumer wakes up (chain wake-up).
  if #jid > 0 and wakeLen == 0 then redis.call('LPUSH', KEYS[5], '1') end
elseif nxt[2] then
  out[1] = math.min(math.max(0, tonumber(nxt[2]) - now), 9007199254740991)
else
  out[1] = -2
end
-- Group policy: lanes blocked by their rate window wait for it (the soonest window end).
local gp = ln and ln.gp
if gp and gp.wait and out[1] ~= -1 then out[1] = out[1] == -2 and gp.wait or math.min(out[1], gp.wait) end
-- Attempt starts asked for: from now on every claim writes `started`, enqueue's lease to a parked
-- consumer too (so set before a registration as well as after a claim; once per queue).
if stampArg == '1' and meta.stamp ~= '1' and (#jid > 0 or park) then redis.call('HSET', KEYS[1], 'stamp', '1') end
if park then claim_park_end(park, KEYS, #jid < n, now) end
return out
end
return run(main)
