-- claim.lua: EchoMQ protocol v1. Promotes due scheduled jobs to pending, then claims up to n
-- pending jobs for one consumer: each gets a lease on the server clock, a fencing token minted
-- from the queue's monotonic counter, and one more counted attempt. The first claim of a job
-- creates its row (and moves its own options, if any, into it). A claim that claims adds the
-- anchor to `active` (docs/protocol.md §2: a member at score +inf that keeps the zset in skiplist
-- encoding). Priorities (meta `lanes` set): level p 1..9 waits in `<pending>:<p>` (derived from
-- KEYS[2], same slot), `emq:{q}:levels` lists the levels with ids; claimed highest level first,
-- FIFO within a level, at most ten lists read whatever the backlog; a due job joins the list of
-- its level (its row's `prio`, else the third field of its opts) and a claimed one gets `prio`
-- in its row.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (`v` version, `token` fencing counter)
-- KEYS[2]  emq:{q}:pending    list of pending ids
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at (ms)
-- KEYS[4]  emq:{q}:active     zset id -> lease deadline (ms), and the anchor at +inf
-- KEYS[5]  emq:{q}:wake       list that idle consumers block on
-- KEYS[6]  emq:{q}:data       hash id -> payload
-- KEYS[7]  emq:{q}:opts       hash id -> "<max attempts>|<backoff>" (until the first claim)
-- KEYS[8]  emq:{q}:job:       prefix of job rows (a row is this prefix followed by the id)
-- KEYS[9]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- KEYS[10] optional, with KEYS[11] and ARGV[5]: emq:{q}:parked, the zset of parked registrations
-- KEYS[11] emq:{q}:inbox:<tag>, the inbox of the consumer that claims. With these two, the call is
--          the claim a parked consumer sends ahead of its `BLPOP inbox:<tag> wake` (docs/protocol.md
--          §5, "Parked consumers"): after claiming, when it claimed fewer than n jobs and the inbox
--          is empty, it registers `<lease ms = ARGV[3]>:<tag>` in `parked` until now + ARGV[5] ms
--          (dropping registrations that ran out), so that an enqueue may lease one job to the
--          consumer; otherwise (no free slot left, or a lease already waiting) it removes that
--          member, and pushes "" to an empty inbox (PX ARGV[5]) so that the BLPOP returns at
--          once. A paused queue answers { -2 } and registers nothing.
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  n, the most jobs to claim (0..1000; 0 only promotes)
-- ARGV[3]  lease in ms (1..86400000)
-- ARGV[4]  the most scheduled jobs to promote in this call (0..10000), earliest run-at first
-- ARGV[5]  optional, with ARGV[6]: a rate limit of this many jobs (1..1000000) per ARGV[6] ms
--          (1..86400000): a fixed window on the server clock counted in `emq:{q}:rate` (a
--          string with PX); a limited call claims what the window has left, and when jobs
--          remain its wait is the ms until the window ends (>= 1). With KEYS[10..11] (exactly
--          five arguments, no rate limit): ARGV[5] is the registration's ms (1..86400000).
-- ARGV[7]  optional (ARGV[5..6] may then be "" "": no queue rate limit): the group policy of fair
--          lanes (docs/protocol.md §5, "Group policy"), space-separated entries
--          `<who>=<cap>,<weight>,<rate max>,<rate ms>`, who `*` (every group; required) or
--          `g:<group>` (one group; at most 1000 entries, 65536 bytes): at most cap jobs of a group
--          active at once (0 = no cap; 1..100000), weight jobs per turn of the rotation
--          (1..1000), at most rate max jobs per rate ms window (0,0 = none; 1..1000000 per
--          1..86400000). Read in lanes mode only; validated always.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Returns: { wait, id_1, token_1, attempt_1, payload_1, extras_1, ..., id_k, ..., extras_k }
--          (k <= n) where wait is -1 when jobs remain pending, else the ms until the next
--          scheduled job is due (0 when one is due already; -2 when none is scheduled; at most
--          2^53-1).
--          wait, token and attempt are integer replies; id, payload and extras bulk strings.
--          extras is "" for a job enqueued without extras, else the JSON object text enqueue
--          stored (docs/protocol.md §3, "Extras"): the first claim moves it from the fourth field
--          of its opts to its row's `x`, later claims read it there (only once meta `xtra` is
--          set: a queue that never had extras reads nothing more).
--          Jobs are claimed oldest first: pending in FIFO order, then the jobs this call promoted.
--          A paused queue (meta `paused` = 1, pause.lua) answers { -2 } and writes nothing.
--          An id whose data is gone (deleted by hand) is dropped from pending, without a row; a
--          ghost (data "", left by cancel.lua) is dropped too, its payload moved from its row back
--          to `data` and meta `ghosts` decremented.
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key that is not
--          the one the key grammar spells for the queue of KEYS[1]), EMQ_VERSION,
--          EMQ_WRONGTYPE (a key, or meta `token`, holds another type). Every check and every
--          read comes before the first write, but for one: fair lanes without a policy pop a
--          lane's ids as they read them (pop-as-read), and a refusal after those pops pushes
--          the popped ids back first, so a refused claim still changes nothing.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- undo: set once fair lanes popped ids as they read them (pop-as-read, below); it pushes them
-- back, so that a refusal after the pops still changes nothing.
local undo = nil
-- The reply of a command run through redis.pcall, when it failed: WRONGTYPE becomes
-- EMQ_WRONGTYPE naming the key, any other error passes as it is; nil when it succeeded.
-- (A refusal: the lane pops, if any, are undone first.)
local function refused(r, key)
  if type(r) ~= 'table' or not r.err then return nil end
  if undo then undo(); undo = nil end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' holds a value of another type than the protocol gives it')
  end
  return r
end
if not ((#KEYS == 9 and (#ARGV == 4 or #ARGV == 6 or #ARGV == 7)) or (#KEYS == 11 and #ARGV == 5)) then
  return redis.error_reply('EMQ_BAD_ARG expected 9 keys and 4 arguments (6 with a rate limit, 7 with a group policy), or 11 keys and 5 arguments (a parked registration)')
end
local V = '1'
local ANCHOR = '~ EchoMQ anchor: keeps this zset in skiplist encoding; score +inf, never a job ~'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, pending, scheduled, active, wake, data, opts, job:, events.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'pending'
  or KEYS[3] ~= b .. 'scheduled' or KEYS[4] ~= b .. 'active' or KEYS[5] ~= b .. 'wake'
  or KEYS[6] ~= b .. 'data' or KEYS[7] ~= b .. 'opts' or KEYS[8] ~= b .. 'job:'
  or KEYS[9] ~= b .. 'events' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, pending, scheduled, active, wake, data, opts, job:, events of one queue, in this order')
end
-- A parked consumer's claim (KEYS[10..11], ARGV[5]): the registration's inputs and its keys'
-- types are checked here, before anything is written; the registration itself is the last write.
local park = nil
if #KEYS == 11 then
  local ib = b .. 'inbox:'
  local tag = string.sub(KEYS[11], #ib + 1)
  if KEYS[10] ~= b .. 'parked' or string.sub(KEYS[11], 1, #ib) ~= ib or #tag == 0 or #tag > 32 or string.find(tag, '[^A-Za-z0-9]') then
    return redis.error_reply('EMQ_BAD_ARG KEYS[10..11] must be the keys parked, inbox:<tag> (tag 1..32 of A-Za-z0-9) of the queue of KEYS[1]')
  end
  local ttl = int(ARGV[5], 1, 86400000)
  if not ttl then return redis.error_reply('EMQ_BAD_ARG the registration ms must be an integer in 1..86400000') end
  local kind = redis.call('TYPE', KEYS[10])['ok']
  if kind ~= 'none' and kind ~= 'zset' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[10] .. ' is a ' .. kind .. ', not a zset')
  end
  local waiting = redis.pcall('LLEN', KEYS[11])
  if type(waiting) ~= 'number' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[11] .. ' is not a list') end
  park = { ttl = ttl, member = ARGV[3] .. ':' .. tag, kind = kind, waiting = waiting }
end
-- Lifecycle events: one sharded pub/sub message per call and kind on the events channel, and,
-- when the queue's `elog` (set by enqueue) is above 0, one entry in the bounded events stream.
local function emit(key, elog, kind, ids, now)
  if #ids == 0 then return end
  -- Ids and kinds are validated base62 / fixed words: plain concatenation is valid JSON.
  redis.call('SPUBLISH', key, '{"e":"' .. kind .. '","ids":["' .. table.concat(ids, '","') .. '"],"at":' .. now .. '}')
  if elog > 0 then
    redis.call('XADD', key, 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', table.concat(ids, ' '), 'at', now)
  end
end
-- Fast path (the valid call): one pattern over the three joined by spaces (exactly two spaces,
-- so none inside an argument), at most 16 digits each (as int()), coercion by `+ 0` and the
-- ranges: it accepts exactly what int() accepts, for about a third of the server instructions
-- of three int() calls; a miss falls back to int() per argument for the message.
local n, lease, promote
if #ARGV[2] < 17 and #ARGV[3] < 17 and #ARGV[4] < 17 and string.find(ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4], '^%d+ %d+ %d+$') then
  n, lease, promote = ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
end
if not (n and n <= 1000 and lease >= 1 and lease <= 86400000 and promote <= 10000) then
  n, lease, promote = int(ARGV[2], 0, 1000), int(ARGV[3], 1, 86400000), int(ARGV[4], 0, 10000)
  if not n then return redis.error_reply('EMQ_BAD_ARG claim count must be 0..1000') end
  if not lease then return redis.error_reply('EMQ_BAD_ARG lease must be 1..86400000 ms') end
  if not promote then return redis.error_reply('EMQ_BAD_ARG promote limit must be 0..10000') end
end
-- A rate limit (ARGV[5] jobs per ARGV[6] ms, a fixed window on the server clock, counted in
-- `emq:{q}:rate`, a string with a PX of the window): a claim takes at most what the window has
-- left; a limited claim's wait reply is the ms until the window ends.
local rateMax, rateMs, rateKey, rateUsed, rateLeft = nil, nil, nil, 0, 0
if #ARGV >= 6 and not (#ARGV == 7 and ARGV[5] == '' and ARGV[6] == '') then
  rateKey = b .. 'rate'
  rateMax, rateMs = int(ARGV[5], 1, 1000000), int(ARGV[6], 1, 86400000)
  if not rateMax or not rateMs then return redis.error_reply('EMQ_BAD_ARG rate limit must be 1..1000000 jobs per 1..86400000 ms') end
  local used = redis.pcall('GET', rateKey)
  local re = refused(used, rateKey)
  if re then return re end
  rateUsed = tonumber(used) or 0
  if rateUsed > 0 then rateLeft = redis.call('PTTL', rateKey) end
  if rateLeft < 0 then rateUsed, rateLeft = 0, 0 end -- no PX: a new window
  n = math.min(n, math.max(0, rateMax - rateUsed))
end
-- The group policy (ARGV[7]): pol[group] (or pol['*']) = { cap, weight, rate max, rate ms }.
local pol, polCap = nil, false
if #ARGV == 7 then
  pol = {}
  local spec, cnt = ARGV[7], 0
  if #spec > 65536 then return redis.error_reply('EMQ_BAD_ARG group policy is at most 65536 bytes') end
  for tok in string.gmatch(spec, '%S+') do
    cnt = cnt + 1
    local who, c, w, r, ms = string.match(tok, '^([^=]+)=([^,]*),([^,]*),([^,]*),([^,]*)$')
    c, w, r, ms = int(c, 0, 100000), int(w, 1, 1000), int(r, 0, 1000000), int(ms, 0, 86400000)
    local g = who and (who == '*' and '*' or string.match(who, '^g:([A-Za-z0-9_.-]+)$'))
    if cnt > 1001 or not g or #g > 100 or not c or not w or not r or not ms or (r == 0) ~= (ms == 0) or pol[g] then
      return redis.error_reply('EMQ_BAD_ARG group policy entry ' .. cnt .. ' must be <*|g:group>=<cap 0..100000>,<weight 1..1000>,<rate max 0..1000000>,<rate ms 0..86400000> (rate 0,0 = none; each group once)')
    end
    pol[g] = { c, w, r, ms }
    if c > 0 then polCap = true end
  end
  if not pol['*'] then return redis.error_reply('EMQ_BAD_ARG group policy needs the entry *=<cap>,<weight>,<rate max>,<rate ms>') end
end

-- Reads first: every key this call writes is read before anything is written, so a key of the
-- wrong type is refused with nothing changed. (On the plain path a refusal is tested inline: a
-- table reply by its `err`, an integer reply by its type, so a read that succeeds costs no call
-- of refused().)
-- (`gcap` is complete.lua's: both read the same fields, so round.lua reads them once for both parts.)
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog', 'token', 'lanes', 'xtra', 'paused', 'gcap')
local e = nil
if meta.err then return refused(meta, KEYS[1]) end
local stored = meta[1]
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
-- Paused (pause.lua): claim nothing, promote nothing; the consumer blocks on `wake` (resume
-- pushes a marker there).
if meta[6] == '1' then return { -2 } end
if meta[3] and not string.match(meta[3], '^%d+$') then
  return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' field token is not an integer')
end
local elog = tonumber(meta[2]) or 0 -- written by enqueue, validated there
-- Priorities (docs/protocol.md §2): set by enqueue once a job of the queue carried one. A
-- queue without it runs the plain path below, command for command.
local lanes = meta[4] == '1'
local xtra = meta[5] == '1' -- extras (enqueue sets it): a retried job's are in its row
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix = KEYS[8]

local due = {}
if promote > 0 then
  due = redis.pcall('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, promote)
  if due.err then return refused(due, KEYS[3]) end
end
-- A retried job has a row (its status goes back to pending); a delayed job gets one at its first claim.
local dueRow = #due > 0 and {} -- (no table when nothing is due: the common claim)
for i = 1, #due do
  local r = redis.pcall('HLEN', prefix .. due[i])
  e = refused(r, prefix .. due[i])
  if e then return e end
  dueRow[i] = r > 0
end
-- plen: the pending ids seen (n + 1 means "more than n"); take: the ids this call pops, in pop
-- order; lrem: (priorities) how many jobs remain pending; ops: (priorities) per level list
-- { key, level, due ids to push, count to pop, levels-set command or false }; tlv: the level
-- of each taken id.
local plen, tail, k, take, lrem, ops, tlv = 0, nil, 0, {}, 0, nil, nil
local levels
-- Fair lanes: tgr, the group of each taken id ('' = none); ringPop, ring entries this claim
-- served; ringPush, lanes to put at the back of the ring.
-- (Allocated in lanes mode only: the plain path builds no table or string it does not use.)
local ringKey, tgr, ringPop, ringPush, laneKey = nil, nil, 0, nil, nil
-- Level-0 lane writes without a policy, as parallel arrays (no table per lane): key, due ids to
-- push at its LPUSH end (or false), popped ids to push back at its RPOP end (or false).
local lwk, lwd, lwp, lwn = nil, nil, nil, 0
local gp = nil -- group policy state for the writes (lanes mode with a policy only)
if lanes then
  ops, tlv, tgr, ringPush, levels, ringKey = {}, {}, {}, {}, b .. 'levels', b .. 'groups'
  laneKey = function(g) return g == '' and KEYS[2] or b .. 'group:' .. g end
  -- Priorities: one list per level 1..9 (`pending:<p>`), 0 is `pending`; `levels` holds the
  -- levels 1..9 whose list has jobs. Claimed highest level first, FIFO within a level: at most
  -- ten lists read, whatever the backlog.
  local present = redis.pcall('ZRANGE', levels, 0, -1)
  e = refused(present, levels)
  if e then return e end
  local has = {}
  for i = 1, #present do has[tonumber(present[i])] = true end
  -- The lane of each due job: its row's `prio` / `group` (a retry), else its opts' third field
  -- (a delayed job: a digit is a priority, `g:<name>` a group).
  local dueBy, dueG = {}, {}
  for i = 1, #due do
    local p, g = nil, nil
    if dueRow[i] then
      local r = redis.call('HMGET', prefix .. due[i], 'prio', 'group')
      p, g = r[1], r[2]
    end
    if not p and not g then
      local o = redis.pcall('HGET', KEYS[7], due[i])
      e = refused(o, KEYS[7])
      if e then return e end
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
  local need = n
  local none = {}
  for L = (#present > 0 or next(dueBy)) and 9 or 0, 1, -1 do -- no level holds ids: nothing to read
    local d = dueBy[L] or none
    if has[L] or #d > 0 then
      local key = KEYS[2] .. ':' .. L
      local t, left
      if need > 0 then
        t = redis.pcall('LRANGE', key, -(need + 1), -1)
        e = refused(t, key)
        if e then return e end
        local fromList = math.min(need, #t)
        for i = #t, #t - fromList + 1, -1 do take[#take + 1] = t[i]; tlv[#take] = L end
        local fromDue = math.min(need - fromList, #d)
        for i = 1, fromDue do take[#take + 1] = d[i]; tlv[#take] = L end
        need = need - fromList - fromDue
        left = #t - fromList + #d - fromDue
        ops[#ops + 1] = { key, L, d, fromList + fromDue, false }
      else
        local len = redis.pcall('LLEN', key)
        e = refused(len, key)
        if e then return e end
        left = len + #d
        if #d > 0 then ops[#ops + 1] = { key, L, d, 0, false } end
      end
      lrem = lrem + left
      local op = ops[#ops]
      if op and op[2] == L then
        if left == 0 and has[L] then op[5] = 'ZREM' elseif left > 0 and not has[L] then op[5] = 'ZADD' end
      end
    end
  end
  -- Level 0 under a group policy (docs/protocol.md §5, "Group policy"). The ring is walked from
  -- its RPOP end: a group at its cap (its live members of `gactive:<g>`, ids still in `active`)
  -- or out of its rate window (`grate:<g>`) is blocked: it goes to the back of the ring without
  -- a job and its work does not count as remaining (a rate-blocked one sets the wait to its
  -- window's rest). The others form the window, until their turns cover need: a lane's turn is
  -- up to its weight w in jobs (less what an earlier claim took of the front lane's turn,
  -- `gturn` = "<taken> <lane>"), served in ring order, in rounds when the window is the whole
  -- ring. A lane whose turn was cut short by need stays at the front (its taken count in
  -- `gturn`); the others go to the back. At most 1000 ring entries are examined per claim.
  if pol then
    gp = { stale = {}, adds = {}, rate = {}, wait = nil, turn = false, turnKey = b .. 'gturn' }
    local turn = redis.pcall('GET', gp.turnKey)
    e = refused(turn, gp.turnKey)
    if e then return e end
    gp.turnWas = turn
    local tUsed, tG = 0, nil
    if turn then
      local u, g = string.match(turn, '^(%d+) (.*)$')
      tUsed, tG = tonumber(u) or 0, g
    end
    local llen = redis.pcall('LLEN', ringKey)
    e = refused(llen, ringKey)
    if e then return e end
    -- Phase 1: walk the ring, policy only (no list read): blocked lanes, then the window.
    local win, seen, cover, pos = {}, {}, 0, 0
    local function settings(g)
      if g == '' then return 0, 1, 0, 0 end
      local s = pol[g] or pol['*']
      return s[1], s[2], s[3], s[4]
    end
    -- A lane's room: how many more jobs it may start now (nil = unlimited), and why it is 0.
    local function room(g)
      local cap, w, rmax, rms = settings(g)
      local allow, why, rest = nil, nil, nil
      if cap > 0 then
        local key = b .. 'gactive:' .. g
        local m = redis.pcall('SMEMBERS', key)
        e = refused(m, key)
        if e then return nil, nil, e end
        local live = 0
        for i = 1, #m do
          local sc = redis.pcall('ZSCORE', KEYS[4], m[i])
          if type(sc) == 'table' and sc.err then return nil, nil, refused(sc, KEYS[4]) end
          if sc then live = live + 1 else gp.stale[#gp.stale + 1] = { key, m[i] } end
        end
        allow, why = math.max(0, cap - live), 'cap'
      end
      if rmax > 0 then
        local key = b .. 'grate:' .. g
        local used = redis.pcall('GET', key)
        e = refused(used, key)
        if e then return nil, nil, e end
        used = tonumber(used) or 0
        local left = used > 0 and redis.call('PTTL', key) or -1
        if left < 0 then used, left = 0, rms end -- no window open: a new one of rms
        if not allow or rmax - used < allow then allow, why = math.max(0, rmax - used), 'rate' end
        gp.rate[g] = { used, rms, left }
        rest = left
      end
      return allow, why, nil, w, rest
    end
    while cover < need and pos < llen and pos < 1000 do
      local c = math.min(need - cover, llen - pos, 1000 - pos)
      local chunk = redis.pcall('LRANGE', ringKey, -(pos + c), -(pos + 1))
      e = refused(chunk, ringKey)
      if e then return e end
      for i = #chunk, 1, -1 do
        local g = chunk[i]
        if cover >= need then break end
        pos = pos + 1
        if not seen[g] then -- a repeated entry is a stale hint: dropped
          seen[g] = true
          local allow, why, re, w, rest = room(g)
          if re then return re end
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
    if whole and not seen[''] and cover < need then
      win[#win + 1] = { g = '', w = 1, q = 1, allow = 1000000, at = pos + 1, used = 0, outside = true }
      cover = cover + 1
    end
    if not whole then lrem = lrem + 1 end -- lanes beyond this claim's walk
    -- Phase 2: one read per window lane of the most it may give (+1 tells "more").
    local rounds = (whole and cover > 0) and math.ceil(need / cover) or 1
    for j = 1, #win do
      local L = win[j]
      L.d = dueG[L.g] or {}
      L.cap = math.min(L.allow, L.q + L.w * (rounds - 1), need)
      local key = laneKey(L.g)
      local t = redis.pcall('LRANGE', key, -(L.cap + 1), -1)
      e = refused(t, key)
      if e then return e end
      L.t, L.more, L.got = t, #t > L.cap, 0
      L.avail = L.more and L.cap or math.min(L.cap, #t + #L.d)
    end
    -- Phase 3: rounds in window order, each lane up to its turn (then its weight).
    local last = nil
    for r = 1, rounds do
      local moved = false
      for j = 1, #win do
        if need == 0 then break end
        local L = win[j]
        local give = math.min(r == 1 and L.q or L.w, L.avail - L.got, need)
        if give > 0 then
          L.got, need, moved, last = L.got + give, need - give, true, L
          L.cut = r == 1 and give < L.q
        end
      end
      if need == 0 or not moved then break end
    end
    -- Phase 4: the jobs taken, the lists' pops, the ring and the turn. When need ran out, the
    -- ring entries after the last lane served keep their place (and that lane too when its
    -- turn was cut short: it stays at the front, its jobs so far in `gturn`).
    local popTo = pos
    if need == 0 and last and not last.outside then
      popTo = (rounds == 1 and last.cut and (last.more or #last.t + #last.d > last.got) and last.got < last.allow) and last.at - 1 or last.at
      if popTo < last.at then gp.turn = (last.used + last.got) .. ' ' .. last.g end
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
    ringPop = popTo
    -- Due jobs of lanes outside the window: an empty list joins the ring as they land in it.
    for g, d in pairs(dueG) do
      local inWin = false
      for j = 1, #win do if win[j].g == g then inWin = true end end
      if not inWin and #d > 0 then
        local key = laneKey(g)
        local len = redis.pcall('LLEN', key)
        e = refused(len, key)
        if e then return e end
        ops[#ops + 1] = { key, 0, d, 0, false }
        if not seen[g] then -- (a blocked lane was walked: its place is kept or it went back)
          lrem = lrem + 1
          if len == 0 then ringPush[#ringPush + 1] = g end
        end
      end
    end
  end
  if not pol then -- (the level-0 block without a policy)
  -- Level 0: fair lanes. The ring `groups` (a list, its RPOP end served next) names the lanes
  -- with pending work: a group (its list `group:<g>`) or "" (`pending`, the jobs without a
  -- group). One claim serves the next `need` lanes of the ring one job per lane per round, then
  -- moves them to the back: a lane with work gets a job within the next G claimed jobs (G = the
  -- lanes with work). Ring entries are hints: an empty lane is dropped when it comes up.
  local ring = redis.pcall('LRANGE', ringKey, -(need + 1), -1)
  e = refused(ring, ringKey)
  if e then return e end
  local win, inWin = {}, {}
  ringPop = math.min(need, #ring)
  for i = #ring, #ring - ringPop + 1, -1 do
    if not inWin[ring[i]] then inWin[ring[i]] = true; win[#win + 1] = ring[i] end
  end
  if #ring > ringPop then lrem = lrem + 1 end -- lanes beyond this claim's window
  local wholeRing = #ring <= need
  if wholeRing and not inWin[''] then inWin[''] = true; win[#win + 1] = '' end -- jobs without a group, not in the ring
  for g, d in pairs(dueG) do
    if not inWin[g] and #d > 0 then win[#win + 1] = g; inWin[g] = 'due' end
  end
  -- Pop-as-read: one RPOP per lane of the window takes its oldest q ids (q = a fair share of
  -- need), the read and the pop in one command. The lanes whose pop took all q may hold more:
  -- one EXISTS over them tells (one per lane only when some lane ended exactly empty). What a
  -- lane took beyond what the rounds give it goes back (RPUSH, with the writes); a refusal
  -- after the first pop pushes every popped id back first (undo), so nothing changes.
  -- (Parallel arrays and one key spelt per lane: this loop runs once per lane of the window.)
  local nw, gpre = #win, b .. 'group:'
  local q = math.ceil(need / math.max(1, nw))
  if q == 1 and nw == need and not wholeRing and not next(dueG) then
    -- The steady state (a ring longer than need, no repeated hint, no due job): each lane of
    -- the window gives its oldest id, in window order, in one pass; one EXISTS over the lanes
    -- that gave tells which go to the back of the ring (an emptied one is gone, and dropped).
    local nk, pk, np = #take, {}, 0
    local base = nk
    undo = function() for x = 1, np do redis.call('RPUSH', pk[x], take[base + x]) end end
    for j = 1, nw do
      local g = win[j]
      local key = g == '' and KEYS[2] or gpre .. g
      local r = redis.pcall('RPOP', key)
      if r then
        if type(r) == 'table' then return refused(r, key) end
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
    undo = function()
      for j = 1, #tails do
        local t = tails[j]
        if #t > 0 then
          local back = {}
          for i = #t, 1, -1 do back[#back + 1] = t[i] end
          redis.call('RPUSH', lk[j], unpack(back))
        end
      end
    end
    for j = 1, nw do
      local g = win[j]
      local key = g == '' and KEYS[2] or gpre .. g
      local t
      if inWin[g] == 'due' or q == 0 then
        -- Outside the ring, with due jobs only (or nothing to claim): gives nothing now; its
        -- length says whether work remains and whether the lane joins the ring as they land.
        local len = redis.pcall('LLEN', key)
        if type(len) == 'table' then return refused(len, key) end
        t, more[j] = {}, len > 0
      elseif q == 1 then
        local r = redis.pcall('RPOP', key)
        if type(r) == 'table' then return refused(r, key) end
        t = r and { r } or {}
      else
        t = redis.pcall('RPOP', key, q)
        if t and t.err then return refused(t, key) end
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
    lwk, lwd, lwp = {}, {}, {}
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
  end
  end -- not pol
  k = #take
else
  -- The oldest n + 1 pending ids (one more than wanted tells whether more remain), or, when
  -- nothing is claimed, the length alone.
  if n > 0 then
    tail = redis.pcall('LRANGE', KEYS[2], -(n + 1), -1)
    if tail.err then return refused(tail, KEYS[2]) end
    plen = #tail
  else
    plen = redis.pcall('LLEN', KEYS[2])
    e = refused(plen, KEYS[2])
    if e then return e end
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
if k > 0 then
  local r = redis.pcall('HLEN', KEYS[7])
  if type(r) == 'table' then return refused(r, KEYS[7]) end
  hasOpts = r > 0
end
-- The jobs to claim, as parallel arrays (no table per job): id, row, payload, attempt; own
-- options (jopt, only when the queue has any) and extras (jx, only once meta `xtra` is set) are
-- allocated only when they can be used, ghosts on the first one (the plain claim builds no
-- table it does not use: each costs an allocation and GC work on the server).
local jid, jrow, jpay, jatt, att = {}, {}, {}, {}, {}
local jopt, jx, ghosts = hasOpts and {}, xtra and {}, nil
local jlv, jgr = tlv and {}, tgr and {} -- lanes mode: each claimed job's level and group
local pays = {} -- every payload in one read
if #take > 0 then
  pays = redis.pcall('HMGET', KEYS[6], unpack(take))
  if pays.err then return refused(pays, KEYS[6]) end
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
    -- A ghost (cancel.lua): a job cancelled while pending leaves its id here (no LREM), its
    -- payload in its row and "" in `data`. Dropped; its payload goes back to `data` below.
    local p = redis.pcall('HGET', row, 'payload')
    if type(p) == 'table' then return refused(p, row) end
    ghosts = ghosts or {}
    ghosts[#ghosts + 1] = { id, p }
    payload = false
  end
  if payload then -- data deleted by hand: the id is dropped, no row is half-created
    local a, x = att[id], nil
    if not a and fresh then
      a = 0
    elseif not a and xtra then
      local cur = redis.pcall('HMGET', row, 'attempts', 'x')
      if cur.err then return refused(cur, row) end
      a, x = tonumber(cur[1]) or 0, cur[2]
    elseif not a then
      local cur = redis.pcall('HGET', row, 'attempts')
      if type(cur) == 'table' then return refused(cur, row) end -- HGET answers a table only to refuse
      a = tonumber(cur) or 0
    end
    a = a + 1
    att[id] = a
    local j = #jid + 1
    jid[j], jrow[j], jpay[j], jatt[j] = id, row, payload, a
    if jopt then jopt[j] = false end
    if jx then jx[j] = x or '' end
    if lanes then
      local lv = tlv and tlv[i] -- (set for the jobs of a level only: fair lanes write no entry per job)
      if lv then jlv[j] = lv end
      jgr[j] = tgr[i]
    end
    if a == 1 and hasOpts then jopt[j] = redis.call('HGET', KEYS[7], id) end
  end
end
local remaining = lanes and lrem or plen + #due - k
local wakeLen, nxt = 1, nil
if remaining > 0 then
  if #jid > 0 then
    wakeLen = redis.pcall('LLEN', KEYS[5])
    if type(wakeLen) == 'table' then return refused(wakeLen, KEYS[5]) end
  end
else
  -- The earliest scheduled job that this call does not promote.
  nxt = redis.pcall('ZRANGE', KEYS[3], #due, #due, 'WITHSCORES')
  if nxt.err then return refused(nxt, KEYS[3]) end
end
if elog > 0 and #jid > 0 then
  local kind = redis.call('TYPE', KEYS[9])['ok']
  if kind ~= 'none' and kind ~= 'stream' then
    if undo then undo() end
    return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[9] .. ' holds a ' .. kind .. ', not a stream')
  end
end

-- Writes. The first one is the type check of `active`: a write refused with WRONGTYPE changes
-- nothing. Promotion goes in slices of 1000 ids (a command takes a bounded number of arguments).
local deadline = now + lease
if #jid > 0 then
  -- The anchor (docs/protocol.md §2): a member longer than zset-max-listpack-value keeps
  -- `active` in skiplist encoding for good, so an insert costs O(log n), not a scan of a
  -- listpack (8x the server time of a batched claim at 50 jobs). Score +inf: never due.
  local zargs = { 'inf', ANCHOR }
  for i = 1, #jid do
    zargs[2 * i + 1] = deadline
    zargs[2 * i + 2] = jid[i]
  end
  local z = redis.pcall('ZADD', KEYS[4], unpack(zargs))
  if type(z) == 'table' then return refused(z, KEYS[4]) end
end
for i = 1, #due, 1000 do
  local j = math.min(i + 999, #due)
  redis.call('ZREM', KEYS[3], unpack(due, i, j))
  if not lanes then redis.call('LPUSH', KEYS[2], unpack(due, i, j)) end
end
for i = 1, #due do
  if dueRow[i] then redis.call('HSET', prefix .. due[i], 'status', 'pending') end
end
if lanes then
  -- A lane list: its due ids pushed (in slices of 1000), then its `pop` oldest ids removed
  -- (LTRIM, not RPOP with a count: the same list, without the removed ids as a reply table).
  local function land(key, d, pop)
    if d then for i = 1, #d, 1000 do redis.call('LPUSH', key, unpack(d, i, math.min(i + 999, #d))) end end
    if pop == 1 then redis.call('RPOP', key) elseif pop > 1 then redis.call('LTRIM', key, 0, -(pop + 1)) end
  end
  for o = 1, #ops do
    local key, L, d, pop, lv = ops[o][1], ops[o][2], ops[o][3], ops[o][4], ops[o][5]
    land(key, #d > 0 and d, pop)
    if lv == 'ZADD' then redis.call('ZADD', levels, L, L) elseif lv == 'ZREM' then redis.call('ZREM', levels, L) end
  end
  for o = 1, lwn do
    local d, back = lwd[o], lwp[o]
    if d then land(lwk[o], d, 0) end
    if back then redis.call('RPUSH', lwk[o], unpack(back)) end
  end
  if ringPop > 0 then redis.call('LTRIM', ringKey, 0, -(ringPop + 1)) end
  if #ringPush > 0 then redis.call('LPUSH', ringKey, unpack(ringPush)) end
  if gp then
    -- Group policy: live counts of capped groups, rate windows, the front lane's turn.
    for i = 1, #gp.stale do redis.call('SREM', gp.stale[i][1], gp.stale[i][2]) end
    for i = 1, #gp.adds do redis.call('SADD', gp.adds[i][1], unpack(gp.adds[i][2])) end
    for g, rs in pairs(gp.rate) do
      if rs[4] and rs[4] > 0 then
        if rs[1] == 0 then redis.call('SET', b .. 'grate:' .. g, rs[4], 'PX', rs[2]) else redis.call('INCRBY', b .. 'grate:' .. g, rs[4]) end
      end
    end
    if gp.turn then redis.call('SET', gp.turnKey, gp.turn) elseif gp.turnWas then redis.call('DEL', gp.turnKey) end
    if polCap and redis.call('HGET', KEYS[1], 'gcap') ~= '1' then redis.call('HSET', KEYS[1], 'gcap', '1') end
  end
elseif k > 0 then redis.call('LTRIM', KEYS[2], 0, -(k + 1)) end -- the k oldest (RPOP without its reply table)
-- Ghosts popped (see the read loop): the payload back to `data`, one ghost fewer in meta.
for i = 1, ghosts and #ghosts or 0 do
  local id, p = ghosts[i][1], ghosts[i][2]
  if p then
    redis.call('HSET', KEYS[6], id, p)
    redis.call('HDEL', prefix .. id, 'payload')
  else
    redis.call('HDEL', KEYS[6], id) -- its row left the cancelled retention
  end
end
if ghosts then redis.call('HINCRBY', KEYS[1], 'ghosts', -#ghosts) end
local out = { -1 }
if #jid > 0 then
  local last = redis.call('HINCRBY', KEYS[1], 'token', #jid)
  local moved = hasOpts and {}
  for i = 1, #jid do
    local id, a, o, L, G = jid[i], jatt[i], jopt and jopt[i], lanes and jlv[i], lanes and jgr[i]
    local token = last - #jid + i
    if G == '' then G = nil end
    if G and not o then -- a job of a group (fair lanes), without its own options: one HSET, no table
      redis.call('HSET', jrow[i], 'status', 'active', 'token', token, 'attempts', a, 'group', G)
    elseif o or (L and L > 0) or G then
      local row = { 'status', 'active', 'token', token, 'attempts', a }
      if L and L > 0 then row[7] = 'prio'; row[8] = L end
      if G then row[#row + 1] = 'group'; row[#row + 1] = G end
      local maxA, backoff = string.match(o or '', '^(%d*)|([^|]*)')
      if maxA and maxA ~= '' then row[#row + 1] = 'max'; row[#row + 1] = maxA end
      if backoff and backoff ~= '' then row[#row + 1] = 'backoff'; row[#row + 1] = backoff end
      local x = o and string.match(o, '^[^|]*|[^|]*|[^|]*|(.+)$')
      if x then row[#row + 1] = 'x'; row[#row + 1] = x; jx = jx or {}; jx[i] = x end
      if o then moved[#moved + 1] = id end
      redis.call('HSET', jrow[i], unpack(row))
    else
      redis.call('HSET', jrow[i], 'status', 'active', 'token', token, 'attempts', a)
    end
    out[5 * i - 3] = id
    out[5 * i - 2] = token
    out[5 * i - 1] = a
    out[5 * i] = jpay[i]
    out[5 * i + 1] = jx and jx[i] or ''
  end
  if moved and #moved > 0 then redis.call('HDEL', KEYS[7], unpack(moved)) end
  emit(KEYS[9], elog, 'claimed', jid, now)
end

if rateMax and #jid > 0 then
  if rateUsed == 0 then redis.call('SET', rateKey, #jid, 'PX', rateMs) else redis.call('INCRBY', rateKey, #jid) end
end
if remaining > 0 and rateMax and rateUsed + #jid >= rateMax then
  -- Limited: the consumer waits until the window ends (no chain wake-up, no busy polling).
  out[1] = math.max(1, rateUsed == 0 and rateMs or rateLeft)
elseif remaining > 0 then
  -- More work remains: make sure another idle consumer wakes up (chain wake-up).
  if #jid > 0 and wakeLen == 0 then redis.call('LPUSH', KEYS[5], '1') end
elseif nxt[2] then
  out[1] = math.min(math.max(0, tonumber(nxt[2]) - now), 9007199254740991)
else
  out[1] = -2
end
-- Group policy: lanes blocked by their rate window wait for it (the soonest window end).
if gp and gp.wait and out[1] ~= -1 then out[1] = out[1] == -2 and gp.wait or math.min(out[1], gp.wait) end
-- The parked consumer registers while it has a slot left and no lease waits in its inbox (so an
-- enqueue leases it at most one job, within its slots). Else an earlier registration ends, and
-- an empty inbox gets an empty entry, so that the consumer's BLPOP returns at once by its inbox:
-- a chain wake-up marker this call pushed stays on `wake` for the other consumers.
if park then
  if #jid < n and park.waiting == 0 then
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
return out
