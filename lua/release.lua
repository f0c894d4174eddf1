-- release.lua: EchoMQ protocol v1. Hands active jobs back unstarted or unfinished, each fenced by
-- its token: the job returns to the front of `pending` at once (instead of waiting for its lease
-- to expire) and the attempt its claim counted is given back. Used for prefetched jobs a
-- consumer never started and for handlers abandoned at shutdown. A job flagged by cancel while
-- active (`cancel` = 1) ends `cancelled` instead (attempt given back too; kept in the cancelled
-- set, trimmed to meta `keepc`, default 1000).
--
-- A row with `prio` (a job of priority level p, docs/protocol.md §5) goes back to
-- `<pending>:<p>` (derived from the pending key, same slot) and p to `emq:{q}:levels`.
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:active   zset id -> lease deadline
-- KEYS[3]  emq:{q}:pending  list of pending ids
-- KEYS[4]  emq:{q}:wake     list that idle consumers block on
-- KEYS[5]  emq:{q}:job:     prefix of job rows
-- KEYS[6]  emq:{q}:events   lifecycle events: sharded channel and bounded stream
-- KEYS[7]  emq:{q}:cancelled zset id -> cancelled at (for jobs flagged by cancel)
-- KEYS[8]  emq:{q}:data     hash id -> payload (for jobs trimmed out of the cancelled set)
-- KEYS[8+i] emq:{q}:job:<id_i> the row of job i, for i = 1..n
-- KEYS[9+n] emq:{q}:outbox  (optional, with KEYS[10+n]; required when a flagged row names a
-- KEYS[10+n] emq:{q}:outdue parent): a job that ends cancelled and names a parent writes its
--                           hand-off `d:<id>` = "d <queue> <parent id> <id> cancelled
--                           cancelled" to this queue's outbox (docs/flows.md)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  n, the number of jobs (decimal integer, 1..1000)
-- ARGV[3+2(i-1)], ARGV[4+2(i-1)] per job i: id, token (decimal digits)
-- Returns: an array of n integers: 1 = released, 2 = cancelled (it was flagged), 0 = refused
--          (stale token, not active, or the earlier copy of an id given twice).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the one the key
--          grammar spells for the queue of KEYS[1], a key that is not the row of its id),
--          EMQ_VERSION, EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE, EMQ_WRONGTYPE. Every check comes
--          before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS < 9 or #ARGV < 4 then return redis.error_reply('EMQ_BAD_ARG expected at least 9 keys and 4 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, active, pending, wake, job:, events, cancelled, data.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'active' or KEYS[3] ~= b .. 'pending'
  or KEYS[4] ~= b .. 'wake' or KEYS[5] ~= b .. 'job:' or KEYS[6] ~= b .. 'events'
  or KEYS[7] ~= b .. 'cancelled' or KEYS[8] ~= b .. 'data' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, active, pending, wake, job:, events, cancelled, data of one queue, in this order')
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
local n = int(ARGV[2], 1, 1000000000)
if not n then return redis.error_reply('EMQ_BAD_ARG job count must be an integer >= 1') end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 jobs per call') end
if (#KEYS ~= 8 + n and #KEYS ~= 10 + n) or #ARGV ~= 2 + 2 * n then return redis.error_reply('EMQ_BAD_ARG expected ' .. n .. ' rows and ' .. (2 * n) .. ' job arguments') end
for i = 1, n do
  local id, token = ARGV[3 + 2 * (i - 1)], ARGV[4 + 2 * (i - 1)]
  if badId(id) then return redis.error_reply('EMQ_BAD_ID job ' .. i .. ' has a malformed id') end
  if KEYS[8 + i] ~= KEYS[5] .. id then return redis.error_reply('EMQ_BAD_ARG key ' .. (8 + i) .. ' is not the row of ' .. id) end
  if #token > 20 or not string.match(token, '^%d+$') then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad token') end
end
local keepC = int(meta[3], 1, 1000000) or 1000
local cancelled, data = KEYS[7], KEYS[8]
-- Every row is read before the first write, so a row of the wrong type refuses the whole call.
local rows, anyParent = {}, false
for i = 1, n do
  local cur = redis.pcall('HMGET', KEYS[8 + i], 'status', 'token', 'cancel', 'parent', 'prio', 'group')
  if cur.err then return redis.error_reply('EMQ_WRONGTYPE the row of job ' .. i .. ' is not a hash') end
  rows[i] = cur
  if meta[4] == '1' and cur[1] == 'active' then
    -- Priorities and groups: a job goes back to its lane (docs/protocol.md §5, Priorities, Fair lanes).
    local e = wrongType({ KEYS[3] .. ':' .. (cur[5] or 0), 'list', b .. 'levels', 'zset', b .. 'groups', 'list', b .. 'group:' .. (cur[6] or '-'), 'list' })
    if e then return e end
  end
  if cur[3] == '1' and cur[4] then anyParent = true end
end
local box, due = KEYS[9 + n], KEYS[10 + n]
if box and (box ~= b .. 'outbox' or due ~= b .. 'outdue') then
  return redis.error_reply('EMQ_BAD_ARG the keys after the rows must be the outbox and outdue of the queue')
end
if anyParent then
  if not box then return redis.error_reply('EMQ_BAD_ARG a flagged row names a parent: the outbox and outdue keys are required') end
  local e = wrongType({ box, 'hash', due, 'zset' })
  if e then return e end
end
local handed = 0
local e = wrongType({ KEYS[2], 'zset', KEYS[3], 'list', KEYS[4], 'list', cancelled, 'zset', data, 'hash' })
if not e and elog > 0 then e = wrongType({ KEYS[6], 'stream' }) end
if e then return e end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out, ids, cancelledIds, seen = {}, {}, {}, {}
-- Walk backwards so the first job given ends up first in line. An id given twice is handed
-- back once (the rows were read before the walk): its earlier copy answers 0.
for i = n, 1, -1 do
  local id, token = ARGV[3 + 2 * (i - 1)], ARGV[4 + 2 * (i - 1)]
  local row, cur = KEYS[8 + i], rows[i]
  if cur[1] == 'active' and cur[2] == token and not seen[id] then
    seen[id] = true
    redis.call('ZREM', KEYS[2], id)
    redis.call('HINCRBY', row, 'attempts', -1)
    if cur[3] == '1' then
      redis.call('HSET', row, 'status', 'cancelled', 'finished', now)
      redis.call('ZADD', cancelled, now, id)
      cancelledIds[#cancelledIds + 1] = id
      out[i] = 2
      if cur[4] then -- a flow child hands its cancel to the parent's queue
        redis.call('HSET', box, 'd:' .. id, 'd ' .. cur[4] .. ' ' .. id .. ' cancelled cancelled')
        redis.call('ZADD', due, now, 'd:' .. id)
        handed = handed + 1
      end
    else
      redis.call('HSET', row, 'status', 'pending')
      if meta[4] == '1' then
        -- Lanes mode: back to its level, its group or `pending`; a lane list that was empty joins the ring.
        local p, g = cur[5], cur[6]
        if g then
          if redis.call('RPUSH', b .. 'group:' .. g, id) == 1 then redis.call('LPUSH', b .. 'groups', g) end
        elseif p then
          redis.call('RPUSH', KEYS[3] .. ':' .. p, id)
          redis.call('ZADD', b .. 'levels', p, p)
        elseif redis.call('RPUSH', KEYS[3], id) == 1 then
          redis.call('LPUSH', b .. 'groups', '')
        end
      else
        redis.call('RPUSH', KEYS[3], id)
      end
      ids[#ids + 1] = id
      out[i] = 1
    end
  else
    out[i] = 0
  end
end
if #ids > 0 and redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
if #cancelledIds > 0 then trimCancelled(cancelled, data, KEYS[5], keepC) end
if handed > 0 then redis.call('SPUBLISH', box, handed) end
emit(KEYS[6], elog, 'released', ids, now)
emit(KEYS[6], elog, 'cancelled', cancelledIds, now)
return out
