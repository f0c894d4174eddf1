-- retry.lua: EchoMQ protocol v1. Retry-or-bury for one active job, fenced by its token. The job
-- is scheduled again after its backoff (computed here, on the server clock), or moved to the
-- morgue (`dead`) when it has used its last attempt or the error is fatal. The morgue is capped:
-- its oldest rows beyond the cap are deleted. A job flagged by cancel while active (`cancel` = 1)
-- ends `cancelled` instead (kept in the cancelled set, trimmed to meta `keepc`, default 1000).
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:active     zset id -> lease deadline
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at
-- KEYS[4]  emq:{q}:dead       zset id -> buried at (the morgue)
-- KEYS[5]  emq:{q}:wake       list that idle consumers block on
-- KEYS[6]  emq:{q}:data       hash id -> payload (for jobs trimmed out of the morgue)
-- KEYS[7]  emq:{q}:job:       prefix of job rows (for rows trimmed out of the morgue)
-- KEYS[8]  emq:{q}:job:<id>   the job's row
-- KEYS[9]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- KEYS[10] emq:{q}:cancelled  zset id -> cancelled at (for a job flagged by cancel)
-- KEYS[11] emq:{q}:outbox     (optional, with KEYS[12]; required when the row names a parent)
-- KEYS[12] emq:{q}:outdue     a buried or cancelled job whose row names a parent (a flow child)
--                             writes its hand-off `d:<id>` = "d <queue> <parent id> <id>
--                             <failed|cancelled> <error>" to this queue's outbox (docs/flows.md)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- ARGV[3]  fencing token (decimal digits)
-- ARGV[4]  error text (at most 65536 bytes)
-- ARGV[5]  "1" when the error is fatal (straight to the morgue), else "0"
-- ARGV[6]  default max attempts (decimal integer, 1..1000), used when the row has none
-- ARGV[7]  default backoff ("f:<ms>" or "e:<ms>", ms 0..86400000), used when the row has none
-- ARGV[8]  morgue cap (decimal integer, 1..1000000)
-- Returns: { 0 } refused (stale token or not active); { 1, runAt } scheduled again;
--          { 2, buriedAt } moved to the morgue; { 3, cancelledAt } cancelled (it was flagged).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the one the key
--          grammar spells for the queue of KEYS[1], KEYS[8] not the row of the id),
--          EMQ_VERSION, EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if (#KEYS ~= 10 and #KEYS ~= 12) or #ARGV ~= 8 then return redis.error_reply('EMQ_BAD_ARG expected 10 (or 12) keys and 8 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, active, scheduled, dead, wake, data, job:, (the row),
-- events, cancelled.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'active' or KEYS[3] ~= b .. 'scheduled'
  or KEYS[4] ~= b .. 'dead' or KEYS[5] ~= b .. 'wake' or KEYS[6] ~= b .. 'data' or KEYS[7] ~= b .. 'job:'
  or KEYS[9] ~= b .. 'events' or KEYS[10] ~= b .. 'cancelled' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, active, scheduled, dead, wake, data, job:, the row, events, cancelled of one queue, in this order')
end
local box, due = KEYS[11], KEYS[12]
if box and (box ~= b .. 'outbox' or due ~= b .. 'outdue') then
  return redis.error_reply('EMQ_BAD_ARG KEYS[11] and KEYS[12] must be the outbox and outdue of the queue')
end
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog', 'keepc')
if meta.err then return redis.error_reply('EMQ_WRONGTYPE the queue meta key is not a hash') end
local stored, elog = meta[1], tonumber(meta[2]) or 0
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
-- Refuses (EMQ_WRONGTYPE) unless each key is absent or of its type: checked before the first
-- write wherever a key's first touch would be a write that could fail midway.
local function wrongType(list)
  for i = 1, #list, 2 do
    local t = redis.call('TYPE', list[i])['ok']
    if t ~= 'none' and t ~= list[i + 1] then
      return redis.error_reply('EMQ_WRONGTYPE ' .. list[i] .. ' is a ' .. t .. ', not a ' .. list[i + 1])
    end
  end
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
-- Trims the cancelled set to `keep` (at most 1000 rows per call): the oldest rows and payloads
-- go. A ghost's `data` marker stays, so claim still recognises its id (and an enqueue of it is
-- still refused) until claim pops it.
local function trimCancelled(set, data, prefix, keep)
  local excess = math.min(redis.call('ZCARD', set) - keep, 1000)
  if excess <= 0 then return end
  local old = redis.call('ZPOPMIN', set, excess)
  for i = 1, #old, 2 do
    redis.call('DEL', prefix .. old[i])
    if redis.call('HGET', data, old[i]) ~= '' then redis.call('HDEL', data, old[i]) end
  end
end
local id, token, err, fatal = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if KEYS[8] ~= KEYS[7] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[8] is not the row of ' .. id) end
if #token > 20 or not string.match(token, '^%d+$') then return redis.error_reply('EMQ_BAD_ARG bad token') end
if #err > 65536 then return redis.error_reply('EMQ_BAD_ARG error text over 65536 bytes') end
if fatal ~= '0' and fatal ~= '1' then return redis.error_reply('EMQ_BAD_ARG fatal flag must be 0 or 1') end
local defMax, defBackoff, cap = int(ARGV[6], 1, 1000), ARGV[7], int(ARGV[8], 1, 1000000)
if not defMax then return redis.error_reply('EMQ_BAD_ARG default max attempts must be an integer in 1..1000') end
local _, defBase = string.match(defBackoff, '^([fe]):(%d+)$')
if not int(defBase, 0, 86400000) then return redis.error_reply('EMQ_BAD_ARG default backoff must be f:<ms> or e:<ms>, ms 0..86400000') end
if not cap then return redis.error_reply('EMQ_BAD_ARG morgue cap must be an integer in 1..1000000') end
local keepC = int(meta[3], 1, 1000000) or 1000
local cancelled = KEYS[10]

local row = KEYS[8]
local cur = redis.pcall('HMGET', row, 'status', 'token', 'attempts', 'max', 'backoff', 'cancel', 'parent')
if cur.err then return redis.error_reply('EMQ_WRONGTYPE the job row is not a hash') end
if cur[1] ~= 'active' or cur[2] ~= token then return { 0 } end
local att = tonumber(cur[3]) or 1
local max = tonumber(cur[4]) or defMax
local outcome = 1
if cur[6] == '1' then outcome = 3 elseif fatal == '1' or att >= max then outcome = 2 end
local e = wrongType({ KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'list', KEYS[6], 'hash', cancelled, 'zset' })
if not e and elog > 0 then e = wrongType({ KEYS[9], 'stream' }) end
local parent = outcome ~= 1 and cur[7]
if not e and parent then
  if not box then return redis.error_reply('EMQ_BAD_ARG the row names a parent: the outbox and outdue keys are required') end
  e = wrongType({ box, 'hash', due, 'zset' })
end
if e then return e end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[2], id)
-- A flow child that ends without completing hands its outcome to the parent's queue.
if parent then
  local what = outcome == 3 and 'cancelled' or 'failed'
  redis.call('HSET', box, 'd:' .. id, 'd ' .. parent .. ' ' .. id .. ' ' .. what .. ' ' .. err)
  redis.call('ZADD', due, now, 'd:' .. id)
  redis.call('SPUBLISH', box, 1)
end
if outcome == 3 then
  redis.call('HSET', row, 'status', 'cancelled', 'error', err, 'finished', now)
  redis.call('ZADD', cancelled, now, id)
  trimCancelled(cancelled, KEYS[6], KEYS[7], keepC)
  emit(KEYS[9], elog, 'cancelled', { id }, now)
  return { 3, now }
end
if outcome == 2 then
  redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now)
  redis.call('ZADD', KEYS[4], now, id)
  local excess = math.min(redis.call('ZCARD', KEYS[4]) - cap, 1000) -- bounded work per call
  if excess > 0 then
    local old = redis.call('ZPOPMIN', KEYS[4], excess)
    for i = 1, #old, 2 do
      redis.call('DEL', KEYS[7] .. old[i])
      redis.call('HDEL', KEYS[6], old[i])
    end
  end
  emit(KEYS[9], elog, 'buried', { id }, now)
  return { 2, now }
end
local kind, base = string.match(cur[5] or defBackoff, '^([fe]):(%d+)$')
local delay = tonumber(base) or 0
if kind == 'e' then delay = delay * math.pow(2, att - 1) end
if delay > 86400000 then delay = 86400000 end -- never back off more than a day
local runAt = now + math.floor(delay)
redis.call('HSET', row, 'status', 'scheduled', 'error', err)
redis.call('ZADD', KEYS[3], runAt, id)
if redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
emit(KEYS[9], elog, 'retried', { id }, now)
return { 1, runAt }
