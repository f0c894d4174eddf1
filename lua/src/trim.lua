-- Applies a topic's retention policy to its log without ever dropping an entry a consumer group
-- still needs: the safe cut is the policy cut (the entry at position len - maxLen, and/or
-- now - maxAgeMs on the server clock; an entry past either limit is due) bounded by every group
-- on the log (its oldest pending id, and its next undelivered entry: nothing after its
-- last-delivered-id goes). At most `limit` entries per call are copied into one archive segment,
-- a JSON array [[streamId, payload], ...] (payloads stay opaque strings), indexed in the archive
-- zset (member "<firstEvtId>-<lastEvtId>", score = first ms), then the log is cut with XTRIM
-- MINID exactly below the first kept entry. Segments whose last entry is older than
-- archiveMaxAgeMs are deleted.
-- Flag allow-oom: trim frees memory (the segment it writes holds at most the entries it cuts
-- from the log, bounded by the budget), so it must run when the server is out of memory.
--
-- @key meta emq:{t}:bus:meta topic meta hash (`v`; policy `maxLen`, `maxAgeMs`, `archiveMaxAgeMs`)
-- @key log emq:{t}:bus:log stream: the event log
-- @key archive emq:{t}:bus:archive zset: segment index
-- @key seg emq:{t}:bus:seg: prefix of segments (a segment is this prefix followed by its member)
-- @arg version version the protocol version
-- @arg limit 1..1000 the most entries to archive in this call
-- @arg budget 1..536870912 segment budget: the most payload bytes in one segment (one entry
--   always fits)
-- @arg expire-limit 0..1000 the most expired segments to delete in this call
-- @returns { archived, trimmed, expired, more } where more = 1 when due entries remain.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, keys that are not one topic's,
--   a corrupt stored policy), EMQ_WRONGTYPE (meta not a hash, log not a stream, archive not a
--   zset), EMQ_BAD_ID (an entry to archive has no branded form). Every check precedes the first
--   write.
-- @flags allow-oom
-- @uses args keys types clock topic-meta
need(#KEYS == 4 and #ARGV == 4, 'expected 4 keys and 4 arguments')
need_keys(KEYS, topic_base(KEYS[1]), { 'meta', 'log', 'archive', 'seg:' })
local policy = topic_meta(KEYS[1], 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs')
local limit = need_int(ARGV[2], 1, 1000, 'limit')
local budget = need_int(ARGV[3], 1, 536870912, 'segment budget')
local expireLimit = need_int(ARGV[4], 0, 1000, 'expire limit')
local bounds = { 1000000000, 3153600000000, 3153600000000 }
for i = 1, 3 do
  local p = policy[i + 1]
  if p then
    policy[i + 1] = int(p, 1, bounds[i])
    need(policy[i + 1] and string.sub(p, 1, 1) ~= '0', 'stored retention policy is corrupt')
  end
end
local maxLen, maxAge, archiveMaxAge = policy[2], policy[3], policy[4]
local logKind, archKind = redis.call('TYPE', KEYS[2])['ok'], redis.call('TYPE', KEYS[3])['ok']
if (logKind ~= 'stream' and logKind ~= 'none') or (archKind ~= 'zset' and archKind ~= 'none') then
  fail('WRONGTYPE', 'the log or archive key holds the wrong type')
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
-- The payload (field `p`) of a stream entry's field list, '' when it has none.
local function payload(fields)
  local p = ''
  for j = 1, #fields, 2 do if fields[j] == 'p' then p = fields[j + 1] end end
  return p
end

local now = now_ms()

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
      local safe = i <= excess or (ageCut and ms < ageCut)
      for g = 1, #floors do
        local fl = floors[g]
        if cmp(id, fl.last) > 0 or (fl.pending and cmp(id, fl.pending) >= 0) then safe = false end
      end
      if not safe then break end
      local p = payload(entries[i][2])
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
    fail('BAD_ID', 'log entry ' .. entries[1][1] .. '..' .. entries[k][1] .. ' has no branded form')
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
  for i = 1, k do seg[i] = { entries[i][1], payload(entries[i][2]) } end
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
