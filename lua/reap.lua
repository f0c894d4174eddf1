-- reap.lua: EchoMQ protocol v1. Moves jobs whose lease expired (on the server clock) back to the
-- front of pending, or to the morgue when they have used their last attempt. A job flagged by
-- cancel while active (`cancel` = 1) ends `cancelled` instead (kept in the cancelled set, trimmed
-- to meta `keepc`, default 1000). Bounded work per call; any live consumer runs it, nothing
-- depends on one special process. The old holder's token stops being valid the moment the row
-- leaves `active`.
--
-- A row with `prio` (a job of priority level p, docs/protocol.md §5) goes back to
-- `<pending>:<p>` (derived from the pending key, same slot) and p to `emq:{q}:levels`.
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:active   zset id -> lease deadline
-- KEYS[3]  emq:{q}:pending  list of pending ids
-- KEYS[4]  emq:{q}:dead     zset id -> buried at (the morgue)
-- KEYS[5]  emq:{q}:wake     list that idle consumers block on
-- KEYS[6]  emq:{q}:data     hash id -> payload (for jobs trimmed out of the morgue)
-- KEYS[7]  emq:{q}:job:     prefix of job rows
-- KEYS[8]  emq:{q}:events   lifecycle events: sharded channel and bounded stream
-- KEYS[9]  emq:{q}:cancelled zset id -> cancelled at (for jobs flagged by cancel)
-- KEYS[10] emq:{q}:outbox   (optional, with KEYS[11]; required when a reaped row names a parent)
-- KEYS[11] emq:{q}:outdue   a buried or cancelled job whose row names a parent (a flow child)
--                           writes its hand-off `d:<id>` = "d <queue> <parent id> <id>
--                           <failed|cancelled> <error>" to this queue's outbox (docs/flows.md)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  the most jobs to reap in this call (decimal integer, 1..1000)
-- ARGV[3]  default max attempts (decimal integer, 1..1000), used when the row has none
-- ARGV[4]  morgue cap (decimal integer, 1..1000000)
-- Returns: { requeued, buried, cancelled } (integers: how many jobs took each way), followed by
--          one pair `id, attempt` per reaped job (the attempt whose lease expired): the requeued
--          jobs first, then the buried, then the cancelled, each in reap order
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a key that is not the one the key
--          grammar spells for the queue of KEYS[1]), EMQ_VERSION, EMQ_WRONGTYPE. Every check
--          comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if (#KEYS ~= 9 and #KEYS ~= 11) or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 9 (or 11) keys and 4 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, active, pending, dead, wake, data, job:, events, cancelled.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'active' or KEYS[3] ~= b .. 'pending'
  or KEYS[4] ~= b .. 'dead' or KEYS[5] ~= b .. 'wake' or KEYS[6] ~= b .. 'data' or KEYS[7] ~= b .. 'job:'
  or KEYS[8] ~= b .. 'events' or KEYS[9] ~= b .. 'cancelled' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, active, pending, dead, wake, data, job:, events, cancelled of one queue, in this order')
end
local box, due = KEYS[10], KEYS[11]
if box and (box ~= b .. 'outbox' or due ~= b .. 'outdue') then
  return redis.error_reply('EMQ_BAD_ARG KEYS[10] and KEYS[11] must be the outbox and outdue of the queue')
end
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog', 'keepc', 'lanes')
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
local limit, defMax, cap = int(ARGV[2], 1, 1000), int(ARGV[3], 1, 1000), int(ARGV[4], 1, 1000000)
if not limit then return redis.error_reply('EMQ_BAD_ARG reap limit must be an integer in 1..1000') end
if not defMax then return redis.error_reply('EMQ_BAD_ARG default max attempts must be an integer in 1..1000') end
if not cap then return redis.error_reply('EMQ_BAD_ARG morgue cap must be an integer in 1..1000000') end
local keepC = int(meta[3], 1, 1000000) or 1000
local cancelled = KEYS[9]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.pcall('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
if expired.err then return redis.error_reply('EMQ_WRONGTYPE the active key is not a zset') end
if #expired == 0 then return { 0, 0, 0 } end
local e = wrongType({ KEYS[3], 'list', KEYS[4], 'zset', KEYS[5], 'list', KEYS[6], 'hash', cancelled, 'zset' })
if not e and elog > 0 then e = wrongType({ KEYS[8], 'stream' }) end
if e then return e end
-- Every row is read before the first write, so a row of the wrong type refuses the whole call.
local rows, anyParent = {}, false
for i = 1, #expired do
  local cur = redis.pcall('HMGET', KEYS[7] .. expired[i], 'attempts', 'max', 'status', 'cancel', 'parent', 'prio', 'group')
  if cur.err then return redis.error_reply('EMQ_WRONGTYPE the row of ' .. expired[i] .. ' is not a hash') end
  rows[i] = cur
  if meta[4] == '1' and cur[3] == 'active' then
    -- Priorities and groups: a job goes back to its lane (docs/protocol.md §5, Priorities, Fair lanes).
    e = wrongType({ KEYS[3] .. ':' .. (cur[6] or 0), 'list', b .. 'levels', 'zset', b .. 'groups', 'list', b .. 'group:' .. (cur[7] or '-'), 'list' })
    if e then return e end
  end
  if cur[5] and cur[3] == 'active' then
    if not box then return redis.error_reply('EMQ_BAD_ARG a reaped row names a parent: the outbox and outdue keys are required') end
    anyParent = true
  end
end
if anyParent then
  e = wrongType({ box, 'hash', due, 'zset' })
  if e then return e end
end
local handed = 0
-- A flow child that ends without completing hands its outcome to the parent's queue.
local function handOff(id, parent, what, err)
  redis.call('HSET', box, 'd:' .. id, 'd ' .. parent .. ' ' .. id .. ' ' .. what .. ' ' .. err)
  redis.call('ZADD', due, now, 'd:' .. id)
  handed = handed + 1
end
local requeuedIds, buriedIds, cancelledIds, attemptOf = {}, {}, {}, {}
-- Lanes mode: a job of level p goes back to `<pending>:<p>` (and p to `levels`), a job of group
-- g to `group:<g>`, another to `pending`; a lane list that was empty joins the ring `groups`.
local function backToLane(id, p, g)
  if g then
    if redis.call('RPUSH', b .. 'group:' .. g, id) == 1 then redis.call('LPUSH', b .. 'groups', g) end
  elseif p then
    redis.call('RPUSH', KEYS[3] .. ':' .. p, id)
    redis.call('ZADD', b .. 'levels', p, p)
  elseif redis.call('RPUSH', KEYS[3], id) == 1 then
    redis.call('LPUSH', b .. 'groups', '')
  end
end
for i = 1, #expired do
  local id, cur = expired[i], rows[i]
  local row = KEYS[7] .. id
  redis.call('ZREM', KEYS[2], id)
  if cur[3] == 'active' then
    local att, max = tonumber(cur[1]) or 1, tonumber(cur[2]) or defMax
    attemptOf[id] = att
    if cur[4] == '1' then
      redis.call('HSET', row, 'status', 'cancelled', 'error', 'lease expired', 'finished', now)
      redis.call('ZADD', cancelled, now, id)
      cancelledIds[#cancelledIds + 1] = id
      if cur[5] then handOff(id, cur[5], 'cancelled', 'lease expired') end
    elseif att >= max then
      redis.call('HSET', row, 'status', 'dead', 'error', 'lease expired after attempt ' .. att, 'finished', now)
      redis.call('ZADD', KEYS[4], now, id)
      buriedIds[#buriedIds + 1] = id
      if cur[5] then handOff(id, cur[5], 'failed', 'lease expired after attempt ' .. att) end
    else
      redis.call('HSET', row, 'status', 'pending', 'error', 'lease expired')
      if meta[4] == '1' then backToLane(id, cur[6], cur[7]) -- its lane, first in line again
      else
        redis.call('RPUSH', KEYS[3], id) -- the pop end: first in line again
      end
      requeuedIds[#requeuedIds + 1] = id
    end
  end
end
local requeued, buried = #requeuedIds, #buriedIds
if handed > 0 then redis.call('SPUBLISH', box, handed) end
emit(KEYS[8], elog, 'requeued', requeuedIds, now)
emit(KEYS[8], elog, 'buried', buriedIds, now)
emit(KEYS[8], elog, 'cancelled', cancelledIds, now)
if buried > 0 then
  local excess = math.min(redis.call('ZCARD', KEYS[4]) - cap, 1000) -- bounded work per call
  if excess > 0 then
    local old = redis.call('ZPOPMIN', KEYS[4], excess)
    for i = 1, #old, 2 do
      redis.call('DEL', KEYS[7] .. old[i])
      redis.call('HDEL', KEYS[6], old[i])
    end
  end
end
if #cancelledIds > 0 then trimCancelled(cancelled, KEYS[6], KEYS[7], keepC) end
if requeued > 0 and redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
local out = { requeued, buried, #cancelledIds }
for _, list in ipairs({ requeuedIds, buriedIds, cancelledIds }) do
  for j = 1, #list do
    out[#out + 1] = list[j]
    out[#out + 1] = attemptOf[list[j]]
  end
end
return out
