-- cancel.lua: EchoMQ protocol v1. Cancels a job that has not started: a pending or scheduled
-- job moves to `cancelled` (kept in a bounded set). An active job is not interrupted here; its
-- row is flagged `cancel` = 1: the holder may observe it, and an attempt that ends without
-- completing (retry, reap, release) ends the job `cancelled` (a complete still completes it).
--
-- Bounded cost whatever the backlog: a pending job's id is not searched for in `pending` (no
-- LREM). It stays there as a ghost: its payload moves into its row (field `payload`), its `data`
-- field becomes "" (so an enqueue of the same id is still refused) and meta `ghosts` counts it;
-- claim drops the id when it pops it and puts the payload back into `data`.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (`ghosts`: ghost ids in pending; `keepc`: the
--                             cancelled retention, recorded here for retry, reap and release)
-- KEYS[2]  emq:{q}:pending    list of pending ids (not touched: kept in the layout)
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at
-- KEYS[4]  emq:{q}:cancelled  zset id -> cancelled at (bounded retention)
-- KEYS[5]  emq:{q}:data       hash id -> payload ("" for a ghost)
-- KEYS[6]  emq:{q}:opts       hash id -> the job's own options (until its first claim)
-- KEYS[7]  emq:{q}:job:       prefix of job rows
-- KEYS[8]  emq:{q}:job:<id>   the job's row
-- KEYS[9]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- KEYS[10] emq:{q}:outbox     (optional, with KEYS[11]; required when the row names a parent or
-- KEYS[11] emq:{q}:outdue     the job is a waiting flow parent): a cancelled job whose row names
--                             a parent writes its hand-off `d:<id>` = "d <queue> <parent id> <id>
--                             cancelled cancelled" to this queue's outbox, and a cancelled
--                             `waiting` parent one entry `x:<child>` = "x <queue> <child>" per
--                             child whose outcome has not arrived (docs/flows.md)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- ARGV[3]  cancelled retention: how many cancelled rows to keep (decimal integer, 1..1000000)
-- Returns: 1 cancelled (also a `waiting` flow parent); 2 active, flagged; 0 already finished;
--          -1 no such job (integers).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, KEYS[8] not the row of the id),
--          EMQ_VERSION, EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if (#KEYS ~= 9 and #KEYS ~= 11) or #ARGV ~= 3 then return redis.error_reply('EMQ_BAD_ARG expected 9 (or 11) keys and 3 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
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
local id, keep = ARGV[2], int(ARGV[3], 1, 1000000)
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if KEYS[8] ~= KEYS[7] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[8] is not the row of ' .. id) end
if not keep then return redis.error_reply('EMQ_BAD_ARG retention must be an integer in 1..1000000') end

local box, due = KEYS[10], KEYS[11]
local b = string.sub(KEYS[1], 1, -5)
if box and (box ~= b .. 'outbox' or due ~= b .. 'outdue') then
  return redis.error_reply('EMQ_BAD_ARG KEYS[10] and KEYS[11] must be the outbox and outdue of the queue')
end
local row = KEYS[8]
local cur = redis.pcall('HMGET', row, 'status', 'parent')
if cur.err then return redis.error_reply('EMQ_WRONGTYPE the job row is not a hash') end
local status, parent = cur[1], cur[2]
local err = wrongType({ KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'hash', KEYS[6], 'hash' })
if err then return err end
if (parent or status == 'waiting') and status ~= 'active' then
  if not box then return redis.error_reply('EMQ_BAD_ARG a flow job: the outbox and outdue keys are required') end
  err = wrongType({ box, 'hash', due, 'zset' })
  if err then return err end
end
if elog > 0 then
  err = wrongType({ KEYS[9], 'stream' })
  if err then return err end
end
local payload = redis.call('HGET', KEYS[5], id)
if not status then
  -- No row yet: a job that was never claimed is scheduled or pending.
  if redis.call('ZSCORE', KEYS[3], id) then
    status = 'scheduled'
  elseif payload and payload ~= '' then -- "" is a ghost whose row left the retention
    status = 'pending'
  else
    return -1
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function recordKeep()
  if meta[3] ~= ARGV[3] then redis.call('HSET', KEYS[1], 'keepc', keep) end
end
if status == 'active' then
  recordKeep()
  redis.call('HSET', row, 'cancel', '1')
  emit(KEYS[9], elog, 'cancel-requested', { id }, now)
  return 2
end
if status == 'pending' then
  -- The id stays in `pending` as a ghost (see the header): O(1) instead of an LREM.
  if payload and payload ~= '' then
    redis.call('HSET', row, 'payload', payload)
    redis.call('HSET', KEYS[5], id, '')
    redis.call('HINCRBY', KEYS[1], 'ghosts', 1)
  end
elseif status == 'scheduled' then
  redis.call('ZREM', KEYS[3], id)
elseif status ~= 'waiting' then
  return 0
end
-- Flow bookkeeping: the parent hears of the cancel; a waiting parent's children still out are
-- cancelled in turn (each relayed like any outbox entry).
local boxed = 0
local function hand(eid, text)
  redis.call('HSET', box, eid, text)
  redis.call('ZADD', due, now, eid)
  boxed = boxed + 1
end
if status == 'waiting' then
  redis.call('HINCRBY', KEYS[1], 'waits', -1) -- meta `waits` (flow-add.lua)
  local all = redis.call('HGETALL', row)
  local have = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r:' then have[string.sub(all[i], 3)] = true end
  end
  for i = 1, #all, 2 do
    local cid = string.sub(all[i], 3)
    if string.sub(all[i], 1, 2) == 'k:' and not have[cid] then
      hand('x:' .. cid, 'x ' .. string.match(all[i + 1], '^[^ ]+') .. ' ' .. cid)
    end
  end
end
if parent then hand('d:' .. id, 'd ' .. parent .. ' ' .. id .. ' cancelled cancelled') end
if boxed > 0 then redis.call('SPUBLISH', box, boxed) end
recordKeep()
redis.call('HSET', row, 'status', 'cancelled', 'finished', now)
redis.call('HDEL', KEYS[6], id)
redis.call('ZADD', KEYS[4], now, id)
trimCancelled(KEYS[4], KEYS[5], KEYS[7], keep)
emit(KEYS[9], elog, 'cancelled', { id }, now)
return 1
