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
