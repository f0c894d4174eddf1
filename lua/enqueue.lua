-- enqueue.lua: EchoMQ protocol v1. Adds one or many jobs to a queue: each new job's payload
-- joins the queue's data hash and its id joins `pending` (the pending list) or `scheduled` (the
-- scheduled set, at its run-at instant on the server clock). A job whose id already has data is
-- left untouched, so an enqueue with a caller-chosen id is idempotent. The job row is created
-- by its first claim (or by cancel): a waiting job costs one hash field and one set entry.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (protocol version `v`)
-- KEYS[2]  emq:{q}:pending    list of pending ids (enqueue LPUSH, claim RPOP: FIFO)
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at (ms)
-- KEYS[4]  emq:{q}:wake       list that idle consumers block on
-- KEYS[5]  emq:{q}:data       hash id -> payload (JSON text)
-- KEYS[6]  emq:{q}:opts       hash id -> "<max attempts>|<backoff>" for jobs with their own options
-- KEYS[7]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  largest payload in bytes (1..536870912)
-- ARGV[3]  n, the number of jobs (1..1000)
-- ARGV[4]  the queue's lifecycle-log length to record in meta `elog` (0..1000000; "" = keep)
-- ARGV[5+6(i-1) .. 10+6(i-1)] per job i: id; payload (JSON text, 1..limit bytes); delay ms
--          (0..315360000000, ten 365-day years; 0 = none); run-at epoch ms on the server clock
--          (0..7258118400000, 2200-01-01T00:00:00Z; 0 = none); max attempts (1..1000, "" =
--          the consumer's default); backoff ("" = the consumer's default, "f:<ms>" fixed or
--          "e:<ms>" exponential, ms 0..86400000). A non-zero delay wins over the run-at. A job
--          whose instant (now + delay, or run-at) is not in the future goes straight to pending.
--          Compact form: ARGV[5+2(i-1) .. 6+2(i-1)] per job i, just the id and the payload (4 + 2n
--          arguments, or 5 + 2n with a dedup window), for jobs with no delay, run-at, options,
--          lane or extras: the same as six arguments with "0", "0", "", "".
-- KEYS[8..7+n] (business-key dedup, optional: all or none) emq:{q}:key:<key_i>, the dedup key
--          of job i (key: 1..256 bytes, no control characters), with one more argument after
--          the jobs: ARGV[5+6n] the dedup window in ms (1..2592000000, 30 days). A key held by
--          a job (enqueued within the window, by this call or before) adds nothing: the reply
--          entry is that job's id. A job added sets its key to its id for the window.
-- ARGV[5+6n .. 4+7n] optional, one per job (before the dedup window when both are given): its priority, 0..9 ("" = 0). A ready job of level
--          p >= 1 joins `<pending>:<p>` (derived from KEYS[2], same slot) and p joins
--          `emq:{q}:levels`; a delayed one keeps p as a third field of its opts
--          ("<max>|<backoff>|<p>"). Meta `lanes` is set to 1 the first time (claim then reads levels).
-- ARGV[5+7n .. 4+8n] optional, one per job, after the n lanes (so a call with extras sends the
--          lanes too, "" each when none): its extras, "" = none, else a JSON object text of
--          2..1024 bytes whose known members are checked: `t` the job's own timeout (an integer,
--          1..86400000 ms), `tp` a W3C traceparent (a string of 1..256 bytes); other members
--          are kept as they are. A job's extras ride in its opts (a fourth field,
--          "<max>|<backoff>|<lane>|<extras>") until its first claim moves them to its row's
--          `x`; claim returns them with every attempt. Meta `xtra` is set to 1 the first time.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Parked consumers (docs/protocol.md §5): a call of one plain job in the compact form, ready now,
--          onto a queue with nothing pending, no lanes and no pause, whose id has no row, leases
--          it to the current registration of emq:{q}:parked with the latest end (the one
--          renewed last: a consumer that died parked renews nothing, so it comes last): `active`
--          (emq:{q}:active) gets the anchor and the id at now + the registration's lease, meta
--          `token` + 1, the row (emq:{q}:job:<id>) status/token/attempts 1; the registration is
--          removed and "<id> <token> <payload>" RPUSHed to emq:{q}:inbox:<tag> (PX the lease).
--          These keys are spelt from the base of KEYS[1] (same slot). Nothing goes to pending
--          or wake; the `claimed` event follows `enqueued`. Anything unusual takes the plain path.
-- Returns: an array of n integers: 1 = added, 0 = a job with this id already existed (or came
--          earlier in the same call); with dedup keys, a bulk string (the holding job's id) for
--          a job whose key was held. A wake marker is pushed (when `wake` is empty) only when a
--          job was added.
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key that is not
--          the one the key grammar spells for the queue of KEYS[1]), EMQ_VERSION,
--          EMQ_WRONGTYPE (a key holds another type), EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE,
--          EMQ_BATCH_TOO_LARGE. Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- The reply of a command run through redis.pcall, when it failed: WRONGTYPE becomes
-- EMQ_WRONGTYPE naming the key, any other error passes as it is; nil when it succeeded.
local function refused(r, key)
  if type(r) ~= 'table' or not r.err then return nil end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' holds a value of another type than the protocol gives it')
  end
  return r
end
if #KEYS < 7 or #ARGV < 4 then return redis.error_reply('EMQ_BAD_ARG expected 7 keys and at least 4 arguments') end
local V = '1'
-- The anchor of `active` (docs/protocol.md §2), as claim.lua adds it: a lease to a parked consumer writes it too.
local ANCHOR = '~ EchoMQ anchor: keeps this zset in skiplist encoding; score +inf, never a job ~'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, pending, scheduled, wake, data, opts, events.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'pending'
  or KEYS[3] ~= b .. 'scheduled' or KEYS[4] ~= b .. 'wake' or KEYS[5] ~= b .. 'data'
  or KEYS[6] ~= b .. 'opts' or KEYS[7] ~= b .. 'events' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, pending, scheduled, wake, data, opts, events of one queue, in this order')
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
-- The 14-byte gate: namespace `job`, 11 base62 digits, body at most 2^64-1. Compared byte by
-- byte: Lua's `>` on strings follows the server's collation locale, not byte order.
local function badId(id)
  if #id ~= 14 or not string.match(id, '^job[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
local maxBytes, n = int(ARGV[2], 1, 536870912), int(ARGV[3], 1, 1000000000)
if not maxBytes or not n then
  return redis.error_reply('EMQ_BAD_ARG the payload limit must be an integer in 1..536870912 and the job count an integer >= 1')
end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 jobs per call') end
-- Business-key dedup: a branch taken only when keys are given, validated before any read.
local keyed, window, taken, holders = #KEYS > 7, nil, nil, nil
if keyed then
  taken, holders = {}, {}
  window = int(ARGV[#ARGV], 1, 2592000000)
  if #KEYS ~= 7 + n or not window then
    return redis.error_reply('EMQ_BAD_ARG dedup needs one key per job and a window of 1..2592000000 ms after the jobs')
  end
  for i = 1, n do
    local k = KEYS[7 + i]
    local bk = string.sub(k, #b + 5)
    if string.sub(k, 1, #b + 4) ~= b .. 'key:' or #bk == 0 or #bk > 256 or string.find(bk, '%c') then
      return redis.error_reply('EMQ_BAD_ARG key ' .. (7 + i) .. ' must be the queue\'s key: prefix and a dedup key of 1..256 bytes without control characters')
    end
  end
end
-- Priorities ride after the jobs (ARGV[5+6n .. 4+7n], one per job), so a plain call is unchanged.
local tail = keyed and 1 or 0 -- the dedup window, last
local xtra = #ARGV == 4 + 8 * n + tail -- extras (ARGV[5+7n .. 4+8n]) come after the lanes
local prio = xtra or #ARGV == 4 + 7 * n + tail
-- The compact form: two arguments per job (id, payload), every other field its default.
local S = #ARGV == 4 + 2 * n + tail and 2 or 6
if #ARGV ~= 4 + 6 * n + tail and not prio and S ~= 2 then
  return redis.error_reply('EMQ_BAD_ARG expected 7 keys and ' .. (6 * n) .. ' job arguments (or ' .. (2 * n) .. ' in the compact form, ' .. (7 * n) .. ' with priorities, ' .. (8 * n) .. ' with extras)' .. (keyed and ', then the dedup window' or ''))
end
-- ext: each job's extras text, or nil ("" = none); checked before any read.
local ext = nil
if xtra then
  ext = {}
  for i = 1, n do
    local x = ARGV[4 + 7 * n + i]
    if x ~= '' then
      local ok, v = false, nil
      if #x >= 2 and #x <= 1024 and string.sub(x, 1, 1) == '{' then ok, v = pcall(cjson.decode, x) end
      local tm, tp = ok and type(v) == 'table' and v.t, ok and type(v) == 'table' and v.tp
      if not ok or type(v) ~= 'table' or (tm ~= nil and (type(tm) ~= 'number' or tm ~= math.floor(tm) or tm < 1 or tm > 86400000))
        or (tp ~= nil and (type(tp) ~= 'string' or #tp == 0 or #tp > 256)) then
        return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has bad extras (a JSON object of 2..1024 bytes; t 1..86400000, tp a string of 1..256 bytes)')
      end
      ext[i] = x
    end
  end
end
-- pri: each job's priority (0..9); grp: its group (a fair lane), or nil.
local pri, grp
if prio then
  pri, grp = {}, {}
  for i = 1, n do
    local p = ARGV[4 + 6 * n + i]
    local g = string.match(p, '^g:(.*)$')
    if g then
      if #g == 0 or #g > 100 or not string.match(g, '^[A-Za-z0-9_.-]+$') then
        return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad group (1..100 of A-Z a-z 0-9 _ . -)')
      end
      grp[i] = g
      pri[i] = 0
    else
      pri[i] = p == '' and 0 or int(p, 0, 9)
      if not pri[i] then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad priority (0..9, "" = 0) or group (g:<name>)') end
    end
  end
end
local setLog = nil
if ARGV[4] ~= '' then
  setLog = int(ARGV[4], 0, 1000000)
  if not setLog then return redis.error_reply('EMQ_BAD_ARG lifecycle-log length must be 0..1000000') end
end
local ids = {}
for i = 1, n do
  local b = 4 + S * (i - 1)
  local id, payload = ARGV[b + 1], ARGV[b + 2]
  if badId(id) then
    return redis.error_reply('EMQ_BAD_ID job ' .. i .. ' has a malformed id')
  end
  if #payload == 0 then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has an empty payload') end
  if #payload > maxBytes then
    return redis.error_reply('EMQ_PAYLOAD_TOO_LARGE job ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. maxBytes)
  end
  if S == 6 then
    if not int(ARGV[b + 3], 0, 315360000000) or not int(ARGV[b + 4], 0, 7258118400000) then
      return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad delay (0..315360000000 ms) or run-at (0..7258118400000)')
    end
    local maxA, backoff = ARGV[b + 5], ARGV[b + 6]
    if maxA ~= '' and not int(maxA, 1, 1000) then
      return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has bad max attempts (1..1000)')
    end
    if backoff ~= '' and not int(string.match(backoff, '^[fe]:(%d+)$'), 0, 86400000) then
      return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
    end
  end
  ids[i] = id
end

-- Reads first: every key this call writes is read (or is the first write) before anything is
-- written, so a key of the wrong type is refused with nothing changed.
local meta
meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog', 'lanes', 'xtra', 'paused', 'token')
local e = refused(meta, KEYS[1])
if e then return e end
local stored = meta[1]
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
local elog = tonumber(meta[2]) or 0 -- written by enqueue, validated there
local logged = elog
local have = redis.pcall('HMGET', KEYS[5], unpack(ids))
e = refused(have, KEYS[5])
if e then return e end
if keyed then
  for i = 1, n do
    holders[i] = redis.pcall('GET', KEYS[7 + i])
    e = refused(holders[i], KEYS[7 + i])
    if e then return e end
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out, data, opts, queued, scheduled, zargs, seen = {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local b = 4 + S * (i - 1)
  local id = ids[i]
  local held = keyed and (holders[i] or taken[KEYS[7 + i]])
  if held then
    out[i] = held
  elseif have[i] or seen[id] then
    out[i] = 0
  else
    if keyed then taken[KEYS[7 + i]] = id end
    seen[id] = true
    out[i] = 1
    data[#data + 1] = id
    data[#data + 1] = ARGV[b + 2]
    local at = 0
    if S == 6 then
      local delay = tonumber(ARGV[b + 3])
      at = delay > 0 and now + delay or tonumber(ARGV[b + 4])
      local maxA, backoff = ARGV[b + 5], ARGV[b + 6]
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
-- Priorities and groups, in a second pass so that the plain loop above stays as it was.
-- plainQ: the queued ids of level 0 without a group (`pending`); byLevel: level 1..9 -> queued
-- ids; byGroup: group -> queued ids (groupOrder: the groups in order of first appearance).
local plainQ, byLevel, byGroup, groupOrder, lanesOn, xtraOn = queued, nil, nil, nil, false, false
if prio then
  plainQ, byLevel, byGroup, groupOrder = {}, {}, {}, {}
  local lv, lg, delayed = {}, {}, {}
  for j = 1, #scheduled do delayed[scheduled[j]] = true end
  for i = 1, n do
    local p, g, id = pri[i], grp[i], ids[i]
    local x = ext and out[i] == 1 and ext[i]
    if out[i] == 1 and (p > 0 or g) then
      lanesOn = true
      lv[id], lg[id] = p, g
    end
    local lane = out[i] == 1 and delayed[id] and (p > 0 or g) and (g and ('g:' .. g) or p)
    if lane or x then
      -- A delayed job's lane waits in opts (a third field: the priority, or g:<group>) for
      -- its promotion by claim, and a job's extras (a fourth field) for its first claim; a
      -- later field of one HSET wins over an earlier one.
      local b = 4 + 6 * (i - 1)
      opts[#opts + 1] = id
      opts[#opts + 1] = ARGV[b + 5] .. '|' .. ARGV[b + 6] .. '|' .. (lane or '') .. (x and ('|' .. x) or '')
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
end
-- Lanes mode (meta `lanes`, or this call turns it on): a lane list that goes from empty to
-- non-empty joins the ring `groups` ("" for `pending`), so claim rotates over it.
local lanesMode = lanesOn or meta[3] == '1'
local ringKey, ringAdd = nil, nil
if lanesMode then ringKey, ringAdd = b .. 'groups', {} end
if setLog then elog = setLog end
-- Lease to a parked consumer (docs/protocol.md §5, "Parked consumers"): one plain job, ready
-- now, on a queue with nothing pending, no lanes and no pause, is leased here to the consumer of
-- the zset `parked` whose current registration ends last, as its claim would lease it, and
-- its lease text goes to that consumer's `inbox:<tag>`, which it blocks on: the job skips
-- `pending` and the consumer's claim call. Anything unusual (a key of another type, a row the id
-- already has, a malformed registration) is left to the claim path: no lease, no error.
local hand = nil
if n == 1 and S == 2 and #queued == 1 and not lanesMode and meta[5] ~= '1' and (not meta[6] or string.match(meta[6], '^%d+$')) then
  local parked = b .. 'parked'
  local reg = redis.pcall('ZRANGE', parked, '+inf', now, 'BYSCORE', 'REV', 'LIMIT', 0, 1)
  local lease, tag = nil, nil
  if not reg.err and reg[1] then lease, tag = string.match(reg[1], '^(%d+):([0-9A-Za-z]+)$') end
  lease = lease and #lease < 9 and tonumber(lease)
  if lease and lease >= 1 and lease <= 86400000 and #tag <= 32 then
    local inbox, row = b .. 'inbox:' .. tag, b .. 'job:' .. queued[1]
    local pl, al = redis.pcall('LLEN', KEYS[2]), redis.pcall('ZCARD', b .. 'active')
    local il, rx = redis.pcall('LLEN', inbox), redis.pcall('EXISTS', row)
    if pl == 0 and type(al) == 'number' and il == 0 and rx == 0 then
      hand = { member = reg[1], parked = parked, lease = lease, inbox = inbox, row = row }
    end
  end
end
local wakeLen = 1
if #data > 0 then
  -- `wake` is written only on the plain path (a lease to a parked consumer pushes no marker).
  if not hand then
    wakeLen = redis.pcall('LLEN', KEYS[4])
    e = refused(wakeLen, KEYS[4])
    if e then return e end
  end
  if #opts > 0 then
    e = refused(redis.pcall('HLEN', KEYS[6]), KEYS[6])
    if e then return e end
  end
  if #queued > 0 and #zargs > 0 then
    e = refused(redis.pcall('ZCARD', KEYS[3]), KEYS[3])
    if e then return e end
  end
  if elog > 0 then
    local kind = redis.call('TYPE', KEYS[7])['ok']
    if kind ~= 'none' and kind ~= 'stream' then
      return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[7] .. ' holds a ' .. kind .. ', not a stream')
    end
  end
  local levels = lanesMode and b .. 'levels'
  if lanesMode then
    -- The level and group lists, `levels` and the ring are type-checked before the first write.
    e = refused(redis.pcall('ZCARD', levels), levels) or refused(redis.pcall('LLEN', ringKey), ringKey)
    if prio then
      for p = 1, 9 do
        if not e and byLevel[p] then e = refused(redis.pcall('LLEN', KEYS[2] .. ':' .. p), KEYS[2] .. ':' .. p) end
      end
      for j = 1, #groupOrder do
        local key = b .. 'group:' .. groupOrder[j]
        if not e then e = refused(redis.pcall('LLEN', key), key) end
      end
    end
    if e then return e end
  end
  -- The first write is the type check of its own key: a write refused with WRONGTYPE changes nothing.
  if hand then
    -- The lease, as claim.lua writes a first claim's: `active` (with the anchor, §2), a fenced
    -- token from meta `token`, the row; the registration is used up.
    redis.call('ZADD', b .. 'active', 'inf', ANCHOR, now + hand.lease, queued[1])
    local token = redis.call('HINCRBY', KEYS[1], 'token', 1)
    redis.call('HSET', hand.row, 'status', 'active', 'token', token, 'attempts', 1)
    redis.call('ZREM', hand.parked, hand.member)
    -- "<id> <token> <payload>": the id is 14 bytes and the token digits, so the payload starts
    -- after the second space.
    redis.call('RPUSH', hand.inbox, queued[1] .. ' ' .. token .. ' ' .. data[2])
    redis.call('PEXPIRE', hand.inbox, hand.lease)
  elseif #queued > 0 then
    if #plainQ > 0 then
      local len = redis.pcall('LPUSH', KEYS[2], unpack(plainQ))
      e = refused(len, KEYS[2])
      if e then return e end
      if lanesMode and len == #plainQ then ringAdd[#ringAdd + 1] = '' end
    end
    if prio then
      for j = 1, #groupOrder do
        local g = groupOrder[j]
        if redis.call('LPUSH', b .. 'group:' .. g, unpack(byGroup[g])) == #byGroup[g] then ringAdd[#ringAdd + 1] = g end
      end
      for p = 1, 9 do
        local l = byLevel[p]
        if l then
          redis.call('LPUSH', KEYS[2] .. ':' .. p, unpack(l))
          redis.call('ZADD', levels, p, p)
        end
      end
    end
    if #zargs > 0 then redis.call('ZADD', KEYS[3], unpack(zargs)) end
  else
    e = refused(redis.pcall('ZADD', KEYS[3], unpack(zargs)), KEYS[3])
    if e then return e end
  end
  redis.call('HSET', KEYS[5], unpack(data))
  if keyed then
    for i = 1, n do
      if out[i] == 1 then redis.call('SET', KEYS[7 + i], ids[i], 'PX', window) end
    end
  end
  if #opts > 0 then redis.call('HSET', KEYS[6], unpack(opts)) end
end
if not stored then redis.call('HSET', KEYS[1], 'v', V) end
if lanesOn and meta[3] ~= '1' then
  redis.call('HSET', KEYS[1], 'lanes', '1')
  -- Jobs without a group enqueued before lanes mode: their list joins the ring too.
  if ringAdd[1] ~= '' and redis.call('LLEN', KEYS[2]) > #plainQ then table.insert(ringAdd, 1, '') end
end
if ringAdd and #ringAdd > 0 then redis.call('LPUSH', ringKey, unpack(ringAdd)) end
if xtraOn and meta[4] ~= '1' then redis.call('HSET', KEYS[1], 'xtra', '1') end
if setLog and setLog ~= logged then redis.call('HSET', KEYS[1], 'elog', setLog) end
if wakeLen == 0 and not hand then redis.call('LPUSH', KEYS[4], '1') end
emit(KEYS[7], elog, 'enqueued', queued, now)
emit(KEYS[7], elog, 'scheduled', scheduled, now)
if hand then emit(KEYS[7], elog, 'claimed', queued, now) end
return out
