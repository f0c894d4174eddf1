-- peek.lua: EchoMQ protocol v1. Reads one job atomically (read-only): its row, its payload and,
-- for a job never claimed (no row yet), its status derived from where its id waits and its own
-- options.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:scheduled  zset id -> run-at
-- KEYS[3]  emq:{q}:data       hash id -> payload
-- KEYS[4]  emq:{q}:opts       hash id -> "<max attempts>|<backoff>" (until the first claim)
-- KEYS[5]  emq:{q}:job:       prefix of job rows
-- KEYS[6]  emq:{q}:job:<id>   the job's row
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- Returns: a flat array of bulk strings, field/value pairs: the row's fields (§3 of
--          docs/protocol.md), then `payload` when the job's data exists. A job with no row yet
--          gets `status` (`scheduled` when its id is in the scheduled set, else `pending`),
--          `attempts` "0" and, from its own options, `max` / `backoff`. An empty array when no
--          such job exists (never enqueued, or trimmed out of its retention).
-- Errors:  EMQ_BAD_ARG (missing arguments, a wrong key count or a key that is not
--          the one the key grammar spells for the queue of KEYS[1], KEYS[6] not the row of the id),
--          EMQ_VERSION, EMQ_WRONGTYPE (a key holds another type), EMQ_BAD_ID.
-- The reply of a command run through redis.pcall, when it failed: WRONGTYPE becomes
-- EMQ_WRONGTYPE naming the key, any other error passes as it is; nil when it succeeded.
local function refused(r, key)
  if type(r) ~= 'table' or not r.err then return nil end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' holds a value of another type than the protocol gives it')
  end
  return r
end
if #KEYS ~= 6 or #ARGV ~= 2 then return redis.error_reply('EMQ_BAD_ARG expected 6 keys and 2 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, scheduled, data, opts, job:.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'scheduled' or KEYS[3] ~= b .. 'data'
  or KEYS[4] ~= b .. 'opts' or KEYS[5] ~= b .. 'job:' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, scheduled, data, opts, job: of one queue, in this order')
end
local stored = redis.pcall('HGET', KEYS[1], 'v')
local e = refused(stored, KEYS[1])
if e then return e end
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
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
local id = ARGV[2]
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if KEYS[6] ~= KEYS[5] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[6] is not the row of ' .. id) end

local out = redis.pcall('HGETALL', KEYS[6])
e = refused(out, KEYS[6])
if e then return e end
local payload = redis.pcall('HGET', KEYS[3], id)
e = refused(payload, KEYS[3])
if e then return e end
-- "" marks a ghost (cancel.lua): a job cancelled while pending, whose payload is in its row.
if payload == '' then payload = false end
if #out == 0 then
  if not payload then return {} end
  local at = redis.pcall('ZSCORE', KEYS[2], id)
  e = refused(at, KEYS[2])
  if e then return e end
  local o = redis.pcall('HGET', KEYS[4], id)
  e = refused(o, KEYS[4])
  if e then return e end
  out = { 'status', at and 'scheduled' or 'pending', 'attempts', '0' }
  local maxA, backoff = string.match(o or '', '^(%d*)|([^|]*)')
  if maxA and maxA ~= '' then out[#out + 1] = 'max'; out[#out + 1] = maxA end
  if backoff and backoff ~= '' then out[#out + 1] = 'backoff'; out[#out + 1] = backoff end
  local prio = string.match(o or '', '^[^|]*|[^|]*|(%d)$') -- a delayed job's priority
  if prio then out[#out + 1] = 'prio'; out[#out + 1] = prio end
end
if payload then
  out[#out + 1] = 'payload'
  out[#out + 1] = payload
end
return out
