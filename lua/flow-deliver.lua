-- flow-deliver.lua: EchoMQ protocol v1. Delivers one finished child's outcome to its parent, on
-- the parent's queue (docs/flows.md), or a batch of them (to parents of this queue), applied in
-- order as if one call each. Idempotent: the outcome is recorded once in the parent's
-- row (field `r:<child>` = "<outcome> <text>", set only when absent); a repeat changes nothing.
-- While the parent is `waiting`: a child done (or failed or cancelled under the policy `ignore`
-- or `continue`) lowers `deps`, and the last one moves the parent to `pending` exactly once
-- (event `released`). A child failed or cancelled under the policy `fail` buries the parent
-- (status `dead`, error "child <id> <outcome>: <text>") and writes, in this queue's outbox, one
-- cancel entry (`x:<id>`) per sibling whose outcome has not arrived and, when the parent has a
-- parent of its own, the report of its failure (`d:<parent id>`). An outcome that arrives after
-- the parent stopped waiting is recorded only. Recording an outcome also drops the child's
-- creation entry (`c:<child id>`) from this queue's outbox if it is still there.
--
-- KEYS[1]  emq:{q}:meta      queue meta hash
-- KEYS[2]  emq:{q}:pending   list of pending ids
-- KEYS[3]  emq:{q}:wake      list that idle consumers block on
-- KEYS[4]  emq:{q}:dead      zset id -> buried at (the morgue)
-- KEYS[5]  emq:{q}:data      hash id -> payload (for jobs trimmed out of the morgue)
-- KEYS[6]  emq:{q}:job:      prefix of job rows
-- KEYS[7]  emq:{q}:job:<id>  the parent's row
-- KEYS[8]  emq:{q}:events    lifecycle events: sharded channel and bounded stream
-- KEYS[9]  emq:{q}:outbox    hash entry id -> entry text (also the relay's channel)
-- KEYS[10] emq:{q}:outdue    zset entry id -> due at (ms)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  parent id
-- ARGV[3]  child id
-- ARGV[4]  outcome: `done`, `failed` or `cancelled`
-- ARGV[5]  the child's result (JSON text, "" for none) or error text (at most 536870912 bytes)
-- ARGV[6]  morgue cap (decimal integer, 1..1000000)
-- ARGV[7+4(i-2) .. 10+4(i-2)] (optional) delivery i >= 2 (at most 1000 in all): parent id, child
--          id, outcome, text as ARGV[2..5]; its parent's row is KEYS[6] .. parent id (the same
--          slot by the key grammar). KEYS[7] is the first delivery's parent row.
-- Returns: -1 no such parent, or the child is not one of its children; 0 already delivered
--          (nothing written); 1 recorded (the parent waits for more, or no longer waits);
--          2 recorded and the parent released to `pending`; 3 recorded and the parent buried.
--          With more than one delivery, an array of those integers, one per delivery (events:
--          one `released` and one `buried` message per call, naming every parent concerned).
-- Errors:  EMQ_BAD_ARG, EMQ_VERSION, EMQ_BAD_ID, EMQ_WRONGTYPE, EMQ_BATCH_TOO_LARGE. Every check comes before the
--          first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 10 or #ARGV < 6 or (#ARGV - 6) % 4 ~= 0 then
  return redis.error_reply('EMQ_BAD_ARG expected 10 keys and 6 arguments (and 4 more per further delivery)')
end
if #ARGV > 6 + 4 * 999 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 deliveries per call') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, pending, wake, dead, data, job:, (the row), events,
-- outbox, outdue.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'pending' or KEYS[3] ~= b .. 'wake'
  or KEYS[4] ~= b .. 'dead' or KEYS[5] ~= b .. 'data' or KEYS[6] ~= b .. 'job:'
  or KEYS[8] ~= b .. 'events' or KEYS[9] ~= b .. 'outbox' or KEYS[10] ~= b .. 'outdue' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, pending, wake, dead, data, job:, the row, events, outbox, outdue of one queue, in this order')
end
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog', 'lanes')
if meta.err then return redis.error_reply('EMQ_WRONGTYPE the queue meta key is not a hash') end
-- Lanes mode (meta `lanes`, docs/protocol.md §5 Fair lanes): `pending` joins the ring `groups`
-- when a push makes it non-empty; the ring is type-checked here, before any write.
if meta[3] == '1' then
  local t = redis.call('TYPE', b .. 'groups')['ok']
  if t ~= 'none' and t ~= 'list' then return redis.error_reply('EMQ_WRONGTYPE ' .. b .. 'groups is a ' .. t .. ', not a list') end
end
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
-- Deliveries: the first is ARGV[2..5], each further one 4 arguments after the morgue cap.
local cap = int(ARGV[6], 1, 1000000)
if not cap then return redis.error_reply('EMQ_BAD_ARG morgue cap must be an integer in 1..1000000') end
local D = {}
for i = 1, 1 + (#ARGV - 6) / 4 do
  local a = i == 1 and 1 or 6 + 4 * (i - 2)
  local d = { pid = ARGV[a + 1], cid = ARGV[a + 2], outcome = ARGV[a + 3], text = ARGV[a + 4] }
  if badId(d.pid) or badId(d.cid) then return redis.error_reply('EMQ_BAD_ID delivery ' .. i .. ': malformed parent or child id') end
  if d.outcome ~= 'done' and d.outcome ~= 'failed' and d.outcome ~= 'cancelled' then
    return redis.error_reply('EMQ_BAD_ARG delivery ' .. i .. ': outcome must be done, failed or cancelled')
  end
  if #d.text > 536870912 then return redis.error_reply('EMQ_BAD_ARG delivery ' .. i .. ': result or error text over 536870912 bytes') end
  D[i] = d
end
if KEYS[7] ~= KEYS[6] .. D[1].pid then return redis.error_reply('EMQ_BAD_ARG KEYS[7] is not the row of ' .. D[1].pid) end

-- Reads: every parent row is a hash (or absent), and, when any delivery would write, every key
-- a write may touch is of its type.
local writes = false
for i = 1, #D do
  local cur = redis.pcall('HMGET', KEYS[6] .. D[i].pid, 'status', 'k:' .. D[i].cid, 'r:' .. D[i].cid)
  if cur.err then return redis.error_reply('EMQ_WRONGTYPE the row of parent ' .. D[i].pid .. ' is not a hash') end
  if cur[1] and cur[2] and not cur[3] then writes = true end
end
if writes then
  local e = wrongType({ KEYS[2], 'list', KEYS[3], 'list', KEYS[4], 'zset', KEYS[5], 'hash', KEYS[9], 'hash', KEYS[10], 'zset' })
  if not e and elog > 0 then e = wrongType({ KEYS[8], 'stream' }) end
  if e then return e end
end

local now = 0
if writes then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local released, buried, boxed = {}, {}, 0
local function box(id, entry)
  redis.call('HSET', KEYS[9], id, entry)
  redis.call('ZADD', KEYS[10], now, id)
  boxed = boxed + 1
end
-- One delivery, in order (a later one sees what an earlier one of this call wrote).
local function deliver(d)
  local pid, cid, outcome, text = d.pid, d.cid, d.outcome, d.text
  local row = KEYS[6] .. pid
  local cur = redis.call('HMGET', row, 'status', 'deps', 'parent', 'k:' .. cid, 'r:' .. cid)
  if not cur[1] or not cur[4] then return -1 end
  if cur[5] then return 0 end
  local pol = string.match(cur[4], '^[^ ]+ ([a-z]+) ')
  local fails = outcome ~= 'done' and pol == 'fail'
  redis.call('HSET', row, 'r:' .. cid, outcome .. ' ' .. text)
  -- An outcome proves the child was created: its creation entry, if still in this outbox (the
  -- relay that created the child died before acknowledging), is dropped, so that no late replay
  -- creates the child again after it finished and left (keepDone 0).
  redis.call('HDEL', KEYS[9], 'c:' .. cid)
  redis.call('ZREM', KEYS[10], 'c:' .. cid)
  if cur[1] ~= 'waiting' then return 1 end
  if not fails then
    local left = redis.call('HINCRBY', row, 'deps', -1)
    if left > 0 then return 1 end
    redis.call('HSET', row, 'status', 'pending')
    redis.call('HINCRBY', KEYS[1], 'waits', -1) -- meta `waits`: one waiting job fewer (flow-add.lua)
    if redis.call('LPUSH', KEYS[2], pid) == 1 and meta[3] == '1' then redis.call('LPUSH', b .. 'groups', '') end
    if redis.call('LLEN', KEYS[3]) == 0 then redis.call('LPUSH', KEYS[3], '1') end
    released[#released + 1] = pid
    return 2
  end
  -- Fail the parent: bury it, cancel the siblings still out, report to its own parent.
  local err = 'child ' .. cid .. ' ' .. outcome .. ': ' .. text
  redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now)
  redis.call('HINCRBY', KEYS[1], 'waits', -1)
  local all = redis.call('HGETALL', row)
  local have = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r:' then have[string.sub(all[i], 3)] = true end
  end
  for i = 1, #all, 2 do
    local f = all[i]
    if string.sub(f, 1, 2) == 'k:' then
      local sid = string.sub(f, 3)
      if not have[sid] then box('x:' .. sid, 'x ' .. string.match(all[i + 1], '^[^ ]+') .. ' ' .. sid) end
    end
  end
  if cur[3] then box('d:' .. pid, 'd ' .. cur[3] .. ' ' .. pid .. ' failed ' .. err) end
  redis.call('ZADD', KEYS[4], now, pid)
  local excess = math.min(redis.call('ZCARD', KEYS[4]) - cap, 1000) -- bounded work per call
  if excess > 0 then
    local old = redis.call('ZPOPMIN', KEYS[4], excess)
    for i = 1, #old, 2 do
      redis.call('DEL', KEYS[6] .. old[i])
      redis.call('HDEL', KEYS[5], old[i])
    end
  end
  buried[#buried + 1] = pid
  return 3
end
local out = {}
for i = 1, #D do out[i] = deliver(D[i]) end
if boxed > 0 then redis.call('SPUBLISH', KEYS[9], boxed) end
emit(KEYS[8], elog, 'released', released, now)
emit(KEYS[8], elog, 'buried', buried, now)
if #D == 1 then return out[1] end
return out
