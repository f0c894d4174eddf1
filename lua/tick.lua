-- tick.lua: EchoMQ protocol v1. Turns one due tick of a schedule into (at most) one job, and
-- advances the schedule's next tick, in one atomic step. Compare-and-set: the call names the
-- tick it computed from (`due`) and the SHA1 of the spec text it read; when the stored next
-- tick or spec differ (another instance ticked first, the schedule was replaced or removed) the
-- call is refused with nothing written. So any number of instances may race on one tick and
-- exactly one wins. The job is left exactly as enqueue.lua leaves a job: its payload (the
-- spec's `payload` text) in `data`, its own options in `opts`, its id in `pending` (or in
-- `scheduled` at its run-at when that is in the future), one wake marker when `wake` is empty,
-- and the `enqueued` / `scheduled` lifecycle event; claim.lua takes it from there unchanged.
--
-- KEYS[1..7] emq:{q}:meta, pending, scheduled, wake, data, opts, events (as enqueue.lua)
-- KEYS[8]  emq:{q}:schedules  hash name -> spec text
-- KEYS[9]  emq:{q}:ticks      zset name -> next tick (epoch ms)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  schedule name (1..100 bytes of [A-Za-z0-9_.-])
-- ARGV[3]  SHA1 (40 lowercase hex digits) of the spec text the caller computed from
-- ARGV[4]  due: the next tick the caller read (0..7258118400000)
-- ARGV[5]  the next tick after this call (due+1..7258118400000), or 0: the schedule has no more
--          ticks (its name leaves `ticks`, its spec stays)
-- ARGV[6]  "1": write a job for this tick; "0": advance without a job (a missed tick skipped)
-- ARGV[7]  the job id (a 14-byte `job` id; "" when ARGV[6] is "0")
-- ARGV[8]  the job's run-at (epoch ms on the server clock, 0..7258118400000; 0 or a past
--          instant = pending now); "0" when ARGV[6] is "0"
-- The spec's `attempts` (1..1000) and `backoff` (`f:<ms>` / `e:<ms>`, ms 0..86400000), when
-- present, become the job's own options as in enqueue.lua.
-- Returns: 1 job written and tick advanced; 2 advanced without a job; 0 refused (stale: the
--          stored tick or spec is not the caller's, or no such schedule); -1 the job id is taken
--          (nothing written: mint another).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments or keys, a stored spec that is not a
--          JSON object with a string payload and valid options), EMQ_BAD_ID, EMQ_VERSION,
--          EMQ_WRONGTYPE. Every check comes before the first write.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local function refused(r, key)
  if type(r) ~= 'table' or not r.err then return nil end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' holds a value of another type than the protocol gives it')
  end
  return r
end
if #KEYS ~= 9 or #ARGV ~= 8 then return redis.error_reply('EMQ_BAD_ARG expected 9 keys and 8 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'pending' or KEYS[3] ~= b .. 'scheduled'
  or KEYS[4] ~= b .. 'wake' or KEYS[5] ~= b .. 'data' or KEYS[6] ~= b .. 'opts' or KEYS[7] ~= b .. 'events'
  or KEYS[8] ~= b .. 'schedules' or KEYS[9] ~= b .. 'ticks' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, pending, scheduled, wake, data, opts, events, schedules, ticks of one queue, in this order')
end
local name, sha = ARGV[2], ARGV[3]
if #name == 0 or #name > 100 or not string.match(name, '^[A-Za-z0-9_.-]+$') then
  return redis.error_reply('EMQ_BAD_ARG a schedule name is 1..100 bytes of letters, digits, _ . -')
end
if #sha ~= 40 or not string.match(sha, '^[0-9a-f]+$') then
  return redis.error_reply('EMQ_BAD_ARG the spec SHA1 must be 40 lowercase hex digits')
end
local due, next = int(ARGV[4], 0, 7258118400000), int(ARGV[5], 0, 7258118400000)
if not due or not next or (next ~= 0 and next <= due) then
  return redis.error_reply('EMQ_BAD_ARG due must be 0..7258118400000 and next 0 or due+1..7258118400000')
end
local write, id, runAt = ARGV[6], ARGV[7], int(ARGV[8], 0, 7258118400000)
if write ~= '0' and write ~= '1' then return redis.error_reply('EMQ_BAD_ARG the write flag must be 0 or 1') end
if not runAt then return redis.error_reply('EMQ_BAD_ARG run-at must be 0..7258118400000') end
if write == '0' and (id ~= '' or runAt ~= 0) then
  return redis.error_reply('EMQ_BAD_ARG a tick without a job takes no id and run-at 0')
end
if write == '1' then
  -- The 14-byte gate of enqueue.lua: namespace `job`, 11 base62 digits, body at most 2^64-1.
  local bad = #id ~= 14 or not string.match(id, '^job[0-9A-Za-z]+$')
  if not bad then
    local max = 'LygHa16AHYF'
    for i = 1, 11 do
      local x, y = string.byte(id, i + 3), string.byte(max, i)
      if x ~= y then bad = x > y break end
    end
  end
  if bad then return redis.error_reply('EMQ_BAD_ID the job id is malformed') end
end

-- Reads first: every key this call writes is read (or type-checked) before anything is written.
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog')
local e = refused(meta, KEYS[1])
if e then return e end
local stored = meta[1]
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
local spec = redis.pcall('HGET', KEYS[8], name)
e = refused(spec, KEYS[8])
if e then return e end
local tick = redis.pcall('ZSCORE', KEYS[9], name)
e = refused(tick, KEYS[9])
if e then return e end
if not spec or not tick or tonumber(tick) ~= due or redis.sha1hex(spec) ~= sha then return 0 end
if write == '0' then
  if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
  return 2
end

local ok, s = pcall(cjson.decode, spec)
if not ok or type(s) ~= 'table' or type(s.payload) ~= 'string' or #s.payload == 0 then
  return redis.error_reply('EMQ_BAD_ARG the stored spec of ' .. name .. ' is not a JSON object with a non-empty string payload')
end
local maxA, backoff = s.attempts, s.backoff
if maxA ~= nil and (type(maxA) ~= 'number' or maxA ~= math.floor(maxA) or maxA < 1 or maxA > 1000) then
  return redis.error_reply('EMQ_BAD_ARG the stored spec of ' .. name .. ' has bad attempts (1..1000)')
end
if backoff ~= nil and (type(backoff) ~= 'string' or not int(string.match(backoff, '^[fe]:(%d+)$'), 0, 86400000)) then
  return redis.error_reply('EMQ_BAD_ARG the stored spec of ' .. name .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
end
local have = redis.pcall('HEXISTS', KEYS[5], id)
e = refused(have, KEYS[5])
if e then return e end
if have == 1 then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local later = runAt > now
local elog = tonumber(meta[2]) or 0
local wakeLen = redis.pcall('LLEN', KEYS[4])
e = refused(wakeLen, KEYS[4])
if e then return e end
if maxA ~= nil or backoff ~= nil then
  e = refused(redis.pcall('HLEN', KEYS[6]), KEYS[6])
  if e then return e end
end
if elog > 0 then
  local kind = redis.call('TYPE', KEYS[7])['ok']
  if kind ~= 'none' and kind ~= 'stream' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[7] .. ' holds a ' .. kind .. ', not a stream')
  end
end
-- The first write is the type check of its own key: a write refused with WRONGTYPE changes nothing.
if later then
  e = refused(redis.pcall('ZADD', KEYS[3], runAt, id), KEYS[3])
else
  e = refused(redis.pcall('LPUSH', KEYS[2], id), KEYS[2])
end
if e then return e end
redis.call('HSET', KEYS[5], id, s.payload)
if maxA ~= nil or backoff ~= nil then
  redis.call('HSET', KEYS[6], id, (maxA and string.format('%d', maxA) or '') .. '|' .. (backoff or ''))
end
if not stored then redis.call('HSET', KEYS[1], 'v', V) end
if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
if wakeLen == 0 then redis.call('LPUSH', KEYS[4], '1') end
local kind = later and 'scheduled' or 'enqueued'
redis.call('SPUBLISH', KEYS[7], '{"e":"' .. kind .. '","ids":["' .. id .. '"],"at":' .. now .. '}')
if elog > 0 then
  redis.call('XADD', KEYS[7], 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', id, 'at', now)
end
return 1
