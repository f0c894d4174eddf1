-- trim.lua: EchoMQ protocol v1. Applies a topic's retention policy to its log without ever
-- dropping an entry a consumer group still needs: the safe cut is the policy cut (the entry at
-- position len - maxLen, and/or now - maxAgeMs on the server clock; an entry past either limit
-- is due) bounded by every group on the log (its oldest pending id, and its next undelivered
-- entry: nothing after its last-delivered-id goes). At most `limit` entries per call are copied
-- into one archive segment, a JSON array [[streamId, payload], ...] (payloads stay opaque
-- strings), indexed in the archive zset (member "<firstEvtId>-<lastEvtId>", score = first ms),
-- then the log is cut with XTRIM MINID exactly below the first kept entry. Segments whose last
-- entry is older than archiveMaxAgeMs are deleted.
--
-- KEYS[1]  emq:{t}:bus:meta     topic meta hash (`v`; policy `maxLen`, `maxAgeMs`, `archiveMaxAgeMs`)
-- KEYS[2]  emq:{t}:bus:log      stream: the event log
-- KEYS[3]  emq:{t}:bus:archive  zset: segment index
-- KEYS[4]  emq:{t}:bus:seg:     prefix of segments (a segment is this prefix followed by its member)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  limit: the most entries to archive in this call (decimal integer, 1..1000)
-- ARGV[3]  segment budget: the most payload bytes in one segment (1..536870912; one entry always fits)
-- ARGV[4]  the most expired segments to delete in this call (0..1000)
-- Returns: { archived, trimmed, expired, more } where more = 1 when due entries remain.
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, keys that are not one topic's, a corrupt
--          stored policy), EMQ_VERSION,
--          EMQ_WRONGTYPE (meta not a hash, log not a stream, archive not a zset),
--          EMQ_BAD_ID (an entry to archive has no branded form). Every check precedes the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 4 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 4 keys and 4 arguments') end
local base = string.match(KEYS[1], '^(emq:{[A-Za-z0-9_.-]+}:bus:)meta$')
if not base or KEYS[2] ~= base .. 'log' or KEYS[3] ~= base .. 'archive' or KEYS[4] ~= base .. 'seg:' then
  return redis.error_reply('EMQ_BAD_ARG keys must be the meta, log, archive and segment-prefix keys of one topic')
end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local policy = redis.pcall('HMGET', KEYS[1], 'v', 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs')
if policy.err then return redis.error_reply('EMQ_WRONGTYPE the topic meta key is not a hash') end
local stored = policy[1]
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION topic data is protocol ' .. stored .. ', script speaks ' .. V)
end
local limit, budget, expireLimit = int(ARGV[2], 1, 1000), int(ARGV[3], 1, 536870912), int(ARGV[4], 0, 1000)
if not limit then return redis.error_reply('EMQ_BAD_ARG limit must be an integer in 1..1000') end
if not budget then return redis.error_reply('EMQ_BAD_ARG segment budget must be an integer in 1..536870912') end
if not expireLimit then return redis.error_reply('EMQ_BAD_ARG expire limit must be an integer in 0..1000') end
local bounds = { 1000000000, 3153600000000, 3153600000000 }
for i = 1, 3 do
  local p = policy[i + 1]
  if p then
    policy[i + 1] = int(p, 1, bounds[i])
    if not policy[i + 1] or string.sub(p, 1, 1) == '0' then
      return redis.error_reply('EMQ_BAD_ARG stored retention policy is corrupt')
    end
  end
end
local maxLen, maxAge, archiveMaxAge = policy[2], policy[3], policy[4]
local logKind = redis.call('TYPE', KEYS[2])['ok']
local archKind = redis.call('TYPE', KEYS[3])['ok']
if (logKind ~= 'stream' and logKind ~= 'none') or (archKind ~= 'zset' and archKind ~= 'none') then
  return redis.error_reply('EMQ_WRONGTYPE the log or archive key holds the wrong type')
end

local B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
local EPOCH, LOW = 1735689600000, 4194304
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function cmp(a, b) -- stream ids: -1, 0, 1
  local am, as = parse(a)
  local bm, bs = parse(b)
  if am ~= bm then return am < bm and -1 or 1 end
  if as ~= bs then return as < bs and -1 or 1 end
  return 0
end
-- The branded event id of a stream id: 'evt' + base62 of (ms - epoch) * 2^22 + seq, in exact
-- double arithmetic (each step divides the pair by 62; every intermediate stays below 2^53).
local function evtId(id)
  local ms, seq = parse(id)
  local hi, lo = ms - EPOCH, seq
  if hi < 0 or hi > 4398046511103 or lo >= LOW then return nil end
  local out = {}
  for i = 11, 1, -1 do
    local remHi = hi % 62
    hi = (hi - remHi) / 62
    local mid = remHi * LOW + lo
    local r = mid % 62
    lo = (mid - r) / 62
    out[i] = string.sub(B62, r + 1, r + 1)
  end
  return 'evt' .. table.concat(out)
end
-- The mint ms of an event id's body (11 base62 digits), or nil.
local function evtMs(body)
  if not body or not string.match(body, '^[0-9A-Za-z]+$') or #body ~= 11 then return nil end
  local hi, lo = 0, 0
  for i = 1, 11 do
    lo = lo * 62 + (string.find(B62, string.sub(body, i, i), 1, true) - 1)
    local carry = math.floor(lo / LOW)
    lo = lo - carry * LOW
    hi = hi * 62 + carry
  end
  return hi + EPOCH
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Entries due and safe, from the head of the log.
local k, more, entries, bytes = 0, 0, {}, 0
if logKind == 'stream' and (maxLen or maxAge) then
  local excess = maxLen and (redis.call('XLEN', KEYS[2]) - maxLen) or 0
  local ageCut = maxAge and (now - maxAge) or nil
  if excess > 0 or ageCut then
    local floors = {}
    local groups = redis.call('XINFO', 'GROUPS', KEYS[2])
    for g = 1, #groups do
      local info, f = groups[g], {}
      for j = 1, #info, 2 do f[info[j]] = info[j + 1] end
      local floor = { last = f['last-delivered-id'] }
      if tonumber(f['pending']) > 0 then floor.pending = redis.call('XPENDING', KEYS[2], f['name'])[2] end
      floors[#floors + 1] = floor
    end
    entries = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', limit + 1)
    for i = 1, math.min(#entries, limit) do
      local id = entries[i][1]
      local ms = parse(id)
      local due = i <= excess or (ageCut and ms < ageCut)
      local safe = due
      for g = 1, #floors do
        local fl = floors[g]
        if cmp(id, fl.last) > 0 or (fl.pending and cmp(id, fl.pending) >= 0) then safe = false end
      end
      if not safe then break end
      local fields, p = entries[i][2], ''
      for j = 1, #fields, 2 do if fields[j] == 'p' then p = fields[j + 1] end end
      if k > 0 and bytes + #p > budget then more = 1; break end
      bytes = bytes + #p
      k = i
      if i == limit and #entries > limit then more = 1 end
    end
  end
end
local first, last
if k > 0 then
  first, last = evtId(entries[1][1]), evtId(entries[k][1])
  if not first or not last then
    return redis.error_reply('EMQ_BAD_ID log entry ' .. entries[1][1] .. '..' .. entries[k][1] .. ' has no branded form')
  end
end

-- Writes: expire old segments, archive, cut.
local expired = 0
if archiveMaxAge and archKind == 'zset' and expireLimit > 0 then
  local cutoff = now - archiveMaxAge
  local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. cutoff, 'LIMIT', 0, expireLimit)
  for i = 1, #old do
    local lastMs = evtMs(string.match(old[i], '^evt[0-9A-Za-z]+%-evt([0-9A-Za-z]+)$'))
    if lastMs and lastMs >= cutoff then break end
    redis.call('DEL', KEYS[4] .. old[i])
    redis.call('ZREM', KEYS[3], old[i])
    expired = expired + 1
  end
end
local trimmed = 0
if k > 0 then
  local seg = {}
  for i = 1, k do
    local fields, p = entries[i][2], ''
    for j = 1, #fields, 2 do if fields[j] == 'p' then p = fields[j + 1] end end
    seg[i] = { entries[i][1], p }
  end
  local member = first .. '-' .. last
  redis.call('SET', KEYS[4] .. member, cjson.encode(seg))
  redis.call('ZADD', KEYS[3], string.match(entries[1][1], '^(%d+)-'), member)
  local cut
  if entries[k + 1] then
    cut = entries[k + 1][1]
  else
    local ms, seq = string.match(entries[k][1], '^(%d+)-(%d+)$')
    cut = ms .. '-' .. string.format('%d', tonumber(seq) + 1)
  end
  trimmed = redis.call('XTRIM', KEYS[2], 'MINID', cut)
end
return { k, trimmed, expired, more }
