-- complete.lua: EchoMQ protocol v1. Completes one or many active jobs, each fenced by the token
-- its claim minted: a holder whose lease expired (the job was reaped or re-claimed) is refused
-- and changes nothing. A completed job is kept in the bounded `done` set, or deleted (row and
-- data) at once when the retention is 0. The done set is then trimmed towards the retention,
-- oldest first, in steps: a call trims only once the set holds more than retention + slack
-- (slack = floor(retention / 10)), and then back to the retention, at most (the jobs this call
-- added to it) + 100 + slack rows per call; so a steady stream pays the trim's commands once per
-- ~slack completions instead of on every call, and lowering the retention (even to 0) drains
-- older rows over the next completions at a bounded cost.
--
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:active   zset id -> lease deadline
-- KEYS[3]  emq:{q}:done     zset id -> finished at (ms), the bounded retention of done rows
-- KEYS[4]  emq:{q}:data     hash id -> payload
-- KEYS[5]  emq:{q}:job:     prefix of job rows (for rows trimmed out of the retention)
-- KEYS[6]  emq:{q}:events   lifecycle events: sharded channel and bounded stream
-- KEYS[6+i] emq:{q}:job:<id_i> the row of job i, for i = 1..n
-- KEYS[7+n] emq:{q}:outbox  (optional, with KEYS[8+n]; required when a job names a parent)
-- KEYS[8+n] emq:{q}:outdue  a completed job whose row names a parent (`parent` = "<queue> <id>",
--           a flow child) writes its hand-off `d:<id>` = "d <queue> <parent id> <id> done
--           <result>" to this queue's outbox in the same step (docs/flows.md)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  done retention: how many done rows to keep (0..1000000)
-- ARGV[3]  n, the number of jobs (1..1000)
-- ARGV[4+3(i-1) .. 6+3(i-1)] per job i: id, token (decimal digits), result (JSON text, "" for none)
-- ARGV[4+3n] optional (only with the outbox keys): a self-relay lease in ms (1..86400000). The
--          caller relays the hand-offs this call writes itself: they are written already taken
--          (due at now + lease, as outbox-take would leave them), no outbox signal is sent, and
--          the reply carries them. A caller that crashes before acknowledging them leaves them
--          to any live relay once the lease lapses (the repair rule, docs/flows.md).
-- Group caps: once meta `gcap` is set (by a claim given a group policy with a cap), a call that
-- completes a job whose row has a `group` pushes a marker on `emq:{q}:wake` (derived from
-- KEYS[1], same slot) when it is empty: its group may be claimable again, without polling.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Returns: an array of n integers: 1 = completed, 0 = refused (stale token, not active, or the
--          same id earlier in this call). A call that completes nothing writes nothing. With a
--          self-relay lease, the n integers are followed by the hand-offs written, as bulk
--          strings { entry id, entry text, ... } (none when no completed job names a parent).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key that is not
--          the one the key grammar spells for the queue of KEYS[1], a row key that is not
--          the row of its id), EMQ_VERSION, EMQ_WRONGTYPE (a key holds another type), EMQ_BAD_ID,
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
if #KEYS < 6 or #ARGV < 3 then return redis.error_reply('EMQ_BAD_ARG expected at least 6 keys and 3 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, active, done, data, job:, events.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'active' or KEYS[3] ~= b .. 'done'
  or KEYS[4] ~= b .. 'data' or KEYS[5] ~= b .. 'job:' or KEYS[6] ~= b .. 'events' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, active, done, data, job:, events of one queue, in this order')
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
  local first = string.byte(id, 4)
  if first ~= 76 then return first > 76 end -- 'L', the first digit of the bound: most ids differ there
  local max = 'LygHa16AHYF'
  for i = 2, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
-- Fast path (the valid call): one pattern over both joined by a space, at most 16 digits each,
-- coercion by `+ 0`, the ranges: exactly what int() accepts; a miss falls back to int() per
-- argument for the message (as claim.lua does).
local keep, n
if #ARGV[2] < 17 and #ARGV[3] < 17 and string.find(ARGV[2] .. ' ' .. ARGV[3], '^%d+ %d+$') then keep, n = ARGV[2] + 0, ARGV[3] + 0 end
if not (keep and keep <= 1000000 and n >= 1 and n <= 1000000000) then
  keep, n = int(ARGV[2], 0, 1000000), int(ARGV[3], 1, 1000000000)
  if not keep then return redis.error_reply('EMQ_BAD_ARG retention must be 0..1000000') end
  if not n then return redis.error_reply('EMQ_BAD_ARG bad job count') end
end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 jobs per call') end
if (#KEYS ~= 6 + n and #KEYS ~= 8 + n) or (#ARGV ~= 3 + 3 * n and (#ARGV ~= 4 + 3 * n or #KEYS ~= 8 + n)) then
  return redis.error_reply('EMQ_BAD_ARG expected ' .. n .. ' rows and ' .. (3 * n) .. ' job arguments (and a self-relay lease only with the outbox keys)')
end
local box, due = KEYS[7 + n], KEYS[8 + n]
local selfLease = nil
if #ARGV == 4 + 3 * n then
  selfLease = int(ARGV[4 + 3 * n], 1, 86400000)
  if not selfLease then return redis.error_reply('EMQ_BAD_ARG self-relay lease must be 1..86400000 ms') end
end
if box and (box ~= b .. 'outbox' or due ~= b .. 'outdue') then
  return redis.error_reply('EMQ_BAD_ARG the keys after the rows must be the outbox and outdue of the queue')
end
for i = 1, n do
  local id = ARGV[4 + 3 * (i - 1)]
  if badId(id) then return redis.error_reply('EMQ_BAD_ID job ' .. i .. ' has a malformed id') end
  if KEYS[6 + i] ~= KEYS[5] .. id then return redis.error_reply('EMQ_BAD_ARG key ' .. (6 + i) .. ' is not the row of ' .. id) end
  if not string.match(ARGV[5 + 3 * (i - 1)], '^%d+$') then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad token') end
end

-- Reads first: every key this call writes is read (or is the first write) before anything is
-- written, so a key of the wrong type is refused with nothing changed.
-- (The same fields as claim.lua reads, in the same order: round.lua reads them once for both parts.)
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog', 'token', 'lanes', 'xtra', 'paused', 'gcap')
local e = nil
if meta.err then return refused(meta, KEYS[1]) end -- a table reply: with `err` only to refuse
local stored = meta[1]
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
local elog = tonumber(meta[2]) or 0 -- written by enqueue, validated there
-- seen (the ids completed so far, for a batch of two or more) and hand (flow hand-offs) are
-- allocated only when they can be used: each table costs an allocation and GC work.
local out, ids, rows, seen, hand = {}, {}, {}, n > 1 and {}, nil
-- Group caps (meta `gcap`, set by a claim given a cap): completing a job of a group wakes an
-- idle consumer, since its group may be claimable again (docs/protocol.md §5, Group policy).
local gcap, grouped = meta[7] == '1', false
for i = 1, n do
  local id, token, row = ARGV[4 + 3 * (i - 1)], ARGV[5 + 3 * (i - 1)], KEYS[6 + i]
  local cur = gcap and redis.pcall('HMGET', row, 'status', 'token', 'parent', 'group') or redis.pcall('HMGET', row, 'status', 'token', 'parent')
  if cur.err then return refused(cur, row) end -- HMGET answers a table: with `err` only to refuse
  if (seen and seen[id]) or cur[1] ~= 'active' or cur[2] ~= token then
    out[i] = 0
  else
    if seen then seen[id] = true end
    ids[#ids + 1] = id
    rows[#rows + 1] = i
    out[i] = 1
    if cur[4] then grouped = true end
    -- A flow child: its hand-off to the parent's queue goes through this queue's outbox.
    if cur[3] then
      hand = hand or {}
      hand[#hand + 1] = 'd:' .. id
      hand[#hand + 1] = 'd ' .. cur[3] .. ' ' .. id .. ' done ' .. ARGV[6 + 3 * (i - 1)]
    end
  end
end
if #ids == 0 then return out end
if hand then
  if not box then return redis.error_reply('EMQ_BAD_ARG a job names a parent: the outbox and outdue keys are required') end
  e = refused(redis.pcall('HLEN', box), box) or refused(redis.pcall('ZCARD', due), due)
  if e then return e end
end
local wake, wakeLen = nil, 1
if grouped then
  wake = b .. 'wake'
  wakeLen = redis.pcall('LLEN', wake)
  e = refused(wakeLen, wake)
  if e then return e end
end
local card = redis.pcall('ZCARD', KEYS[3])
if type(card) == 'table' then return refused(card, KEYS[3]) end -- an integer reply, else a refusal
local added = 0
if keep > 0 then added = #ids end
-- Trim in steps (see the header): the set may run up to `slack` rows beyond the retention, so the
-- ZPOPMIN, DEL and HDEL of a trim (and the data check) run once per ~slack rows, not per call.
local slack = math.floor(keep / 10)
local excess = card + added - keep
if excess <= slack then excess = 0 else excess = math.min(excess, added + 100 + slack) end
if keep == 0 or excess > 0 then
  local d = redis.pcall('HLEN', KEYS[4])
  if type(d) == 'table' then return refused(d, KEYS[4]) end
end
if elog > 0 then
  local kind = redis.call('TYPE', KEYS[6])['ok']
  if kind ~= 'none' and kind ~= 'stream' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[6] .. ' holds a ' .. kind .. ', not a stream')
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The first write is the type check of `active`: a write refused with WRONGTYPE changes nothing.
local z = redis.pcall('ZREM', KEYS[2], unpack(ids))
if type(z) == 'table' then return refused(z, KEYS[2]) end
if keep == 0 then
  local del = {}
  for j = 1, #rows do del[j] = KEYS[6 + rows[j]] end
  redis.call('DEL', unpack(del))
  redis.call('HDEL', KEYS[4], unpack(ids))
else
  local zdone = {}
  for j = 1, #rows do
    local i = rows[j]
    redis.call('HSET', KEYS[6 + i], 'status', 'done', 'result', ARGV[6 + 3 * (i - 1)], 'finished', now)
    zdone[#zdone + 1] = now
    zdone[#zdone + 1] = ids[j]
  end
  redis.call('ZADD', KEYS[3], unpack(zdone))
end
if excess > 0 then
  local old = redis.call('ZPOPMIN', KEYS[3], excess)
  local oldIds, oldRows = {}, {}
  for i = 1, #old, 2 do
    oldIds[#oldIds + 1] = old[i]
    oldRows[#oldRows + 1] = KEYS[5] .. old[i]
  end
  if #oldIds > 0 then
    redis.call('DEL', unpack(oldRows))
    redis.call('HDEL', KEYS[4], unpack(oldIds))
  end
end
if hand then
  local zd = {}
  for j = 1, #hand, 2 do
    zd[#zd + 1] = selfLease and now + selfLease or now
    zd[#zd + 1] = hand[j]
  end
  redis.call('HSET', box, unpack(hand))
  redis.call('ZADD', due, unpack(zd))
  if selfLease then
    for j = 1, #hand do out[n + j] = hand[j] end
  else
    redis.call('SPUBLISH', box, #zd / 2)
  end
end
emit(KEYS[6], elog, 'completed', ids, now)
if wakeLen == 0 then redis.call('LPUSH', wake, '1') end
return out
