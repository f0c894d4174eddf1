#!lua flags=allow-oom
-- trim.lua: EchoMQ protocol v2. Built from lua/src/trim.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Applies a topic's retention policy to its log without ever dropping an entry a consumer group
-- still needs: the safe cut is the policy cut (the entry at position len - maxLen, and/or
-- now - maxAgeMs on the server clock; an entry past either limit is due) bounded by every group
-- on the log (its oldest pending id, and its next undelivered entry: nothing after its
-- last-delivered-id goes). At most `limit` entries per call are copied into one archive segment,
-- a JSON array [[streamId, payload], ...] (payloads stay opaque strings), indexed in the archive
-- zset (member "<firstEvtId>-<lastEvtId>", score = first ms), then the log is cut with XTRIM
-- MINID exactly below the first kept entry. Segments whose last entry is older than
-- archiveMaxAgeMs are deleted, then the oldest segments while the archive's bytes (meta
-- `archiveBytes`, the running total of its segments' lengths) and the new segment's would pass
-- archiveMaxBytes; archiveMaxBytes 0 = no archive: due entries are cut without a segment.
-- A missing total on an existing archive (written by earlier bytes) is counted in steps of 1000
-- segments per call (meta `archiveScan` = "<segments counted> <their bytes>"), `more` = 1 meanwhile;
-- until it is known no segment is deleted by bytes (age expiry goes on).
-- Flag allow-oom: trim frees memory (the segment it writes holds at most the entries it cuts
-- from the log, bounded by the budget), so it must run when the server is out of memory.
--
-- @key meta emq:{t}:bus:meta topic meta hash (`v`; policy `maxLen`, `maxAgeMs`, `archiveMaxAgeMs`,
--   `archiveMaxBytes`; counters `archiveBytes`, `archiveScan`)
-- @key log emq:{t}:bus:log stream: the event log
-- @key archive emq:{t}:bus:archive zset: segment index
-- @key seg emq:{t}:bus:seg: prefix of segments (a segment is this prefix followed by its member)
-- @arg version version the protocol version
-- @arg limit 1..1000 the most entries to archive in this call
-- @arg budget 1..536870912 segment budget: the most payload bytes in one segment (one entry
--   always fits)
-- @arg expire-limit 0..1000 the most expired segments to delete in this call
-- @returns { archived, trimmed, expired, more } where more = 1 when due entries remain (or the
--   archive's bytes are still being counted); expired counts segments deleted by age and by bytes.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, keys that are not one topic's,
--   a corrupt stored policy), EMQ_WRONGTYPE (meta not a hash, log not a stream, archive not a
--   zset), EMQ_BAD_ID (an entry to archive has no branded form). Every check precedes the first
--   write.
-- @flags allow-oom
-- @uses args keys types clock topic-meta
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
-- The base `emq:{<t>}:bus:` of a Bus topic's keys, from its meta key (KEYS[1]).
local function topic_base(meta)
  if type(meta) ~= 'string' or #meta > 114 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:bus:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<topic>}:bus:meta of a topic')
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
-- The reply of a command run through redis.pcall: WRONGTYPE becomes EMQ_WRONGTYPE naming the key,
-- any other error reply is raised as it is (OOM, NOPERM keep their codes); a reply passes.
local function checked(r, key)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) == 'WRONGTYPE' then fail('WRONGTYPE', key .. ' holds a value of another type than the protocol gives it') end
    error(r.err, 0)
  end
  return r
end
-- A Bus topic's meta hash (docs/protocol.md §2) carries its own data version `v` (next to the
-- retention policy): read in the one command a script makes of the hash (HGET of `v`, or HMGET
-- of `v` and the fields asked), WRONGTYPE checked, and refused when it is another version's.
-- Answers { v, field1, … } (false for an absent field).
local function topic_meta(key, ...)
  local m
  if select('#', ...) == 0 then m = { checked(redis.pcall('HGET', key, 'v'), key) }
  else m = checked(redis.pcall('HMGET', key, 'v', ...), key) end
  need_data_version(m[1], key)
  return m
end
local function main(KEYS, ARGV)
need(#KEYS == 4 and #ARGV == 4, 'expected 4 keys and 4 arguments')
need_keys(KEYS, topic_base(KEYS[1]), { 'meta', 'log', 'archive', 'seg:' })
local policy = topic_meta(KEYS[1], 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs', 'archiveMaxBytes', 'archiveBytes', 'archiveScan')
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
-- archiveMaxBytes: absent or `unbounded` = no byte bound; 0 = no archive.
local maxBytes = policy[5]
if maxBytes == 'unbounded' then maxBytes = nil
elseif maxBytes then
  local p = maxBytes
  maxBytes = int(p, 0, 1099511627776)
  need(maxBytes and (p == '0' or string.sub(p, 1, 1) ~= '0'), 'stored retention policy is corrupt')
else maxBytes = nil end
local archiveOff = maxBytes == 0
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
      if k > 0 and not archiveOff and bytes + #p > budget then more = 1; break end
      bytes = bytes + #p
      k = i
      if i == limit and #entries > limit then more = 1 end
    end
  end
end
local first, last
if k > 0 and not archiveOff then
  first, last = evtId(entries[1][1]), evtId(entries[k][1])
  if not first or not last then
    fail('BAD_ID', 'log entry ' .. entries[1][1] .. '..' .. entries[k][1] .. ' has no branded form')
  end
end

-- A segment's length (0 for a key that is not a string: it counts nothing, and never fails a write).
local function segBytes(member)
  local n = redis.pcall('STRLEN', KEYS[4] .. member)
  return type(n) == 'number' and n or 0
end
-- The archive's running byte total (nil while it is being counted; `scan` = { counted, bytes }).
local total = policy[6] and int(policy[6], 0, 9007199254740991) or nil
local scan
if archKind ~= 'zset' then total = 0 -- no archive holds no bytes, whatever a stale total says
elseif not total then
  local counted, part = 0, 0
  local c, b = string.match(policy[7] or '', '^(%d+) (%d+)$')
  if c then counted, part = tonumber(c), tonumber(b) end
  local got = redis.call('ZRANGE', KEYS[3], counted, counted + 999)
  for i = 1, #got do part = part + segBytes(got[i]) end
  if #got < 1000 then total = part else scan = { counted + #got, part }; more = 1 end
end
local segText
if k > 0 and not archiveOff then
  local seg = {}
  for i = 1, k do seg[i] = { entries[i][1], payload(entries[i][2]) } end
  segText = cjson.encode(seg)
end
-- Deletes the oldest segment `member`, keeping the total (or the count in progress) right.
local function drop(member)
  local size = segBytes(member)
  redis.call('DEL', KEYS[4] .. member)
  redis.call('ZREM', KEYS[3], member)
  if total then total = math.max(0, total - size)
  elseif scan[1] > 0 then scan[1], scan[2] = scan[1] - 1, scan[2] - size end
end

-- Writes: expire old segments (by age, then by bytes), archive, cut.
local expired = 0
if archiveMaxAge and archKind == 'zset' and expireLimit > 0 then
  local cutoff = now - archiveMaxAge
  local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. cutoff, 'LIMIT', 0, expireLimit)
  for i = 1, #old do
    local lastMs = evtMs(string.match(old[i], '^evt[0-9A-Za-z]+%-evt([0-9A-Za-z]+)$'))
    if lastMs and lastMs >= cutoff then break end
    drop(old[i])
    expired = expired + 1
  end
end
if maxBytes and total and archKind == 'zset' then
  local incoming = segText and #segText or 0
  while total + incoming > maxBytes and expired < expireLimit do
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0)
    if #oldest == 0 then break end
    drop(oldest[1])
    expired = expired + 1
  end
end
local trimmed = 0
if k > 0 then
  if segText then
    local member = first .. '-' .. last
    redis.call('SET', KEYS[4] .. member, segText)
    redis.call('ZADD', KEYS[3], string.match(entries[1][1], '^(%d+)-'), member)
    if total then total = total + #segText end
  end
  local cut
  if entries[k + 1] then
    cut = entries[k + 1][1]
  else
    local ms, seq = string.match(entries[k][1], '^(%d+)-(%d+)$')
    cut = ms .. '-' .. string.format('%d', tonumber(seq) + 1)
  end
  trimmed = redis.call('XTRIM', KEYS[2], 'MINID', cut)
end
-- The counters, written only when they changed (a trim with nothing to do writes nothing).
if total then
  local t = string.format('%d', total)
  if policy[6] ~= t and (policy[6] or total > 0 or archKind == 'zset') then redis.call('HSET', KEYS[1], 'archiveBytes', t) end
  if policy[7] then redis.call('HDEL', KEYS[1], 'archiveScan') end
else
  redis.call('HSET', KEYS[1], 'archiveScan', string.format('%d %d', scan[1], scan[2]))
end
return { archiveOff and 0 or k, trimmed, expired, more }
end
return run(main)
