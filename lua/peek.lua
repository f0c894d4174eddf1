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
-- Returns: a flat field/value array (the row's fields, then `payload`; `status` derived when
--          there is no row), or an empty array when no such job exists.
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG, EMQ_BAD_ID.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local stored = redis.call('HGET', KEYS[1], 'v')
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

local out = redis.call('HGETALL', KEYS[6])
local payload = redis.call('HGET', KEYS[3], id)
if #out == 0 then
  if not payload then return {} end
  local status = 'pending'
  if redis.call('ZSCORE', KEYS[2], id) then status = 'scheduled' end
  out = { 'status', status, 'attempts', '0' }
  local o = redis.call('HGET', KEYS[4], id)
  if o then
    local maxA, backoff = string.match(o, '^(%d*)|(.*)$')
    if maxA ~= '' then out[#out + 1] = 'max'; out[#out + 1] = maxA end
    if backoff ~= '' then out[#out + 1] = 'backoff'; out[#out + 1] = backoff end
  end
end
if payload then
  out[#out + 1] = 'payload'
  out[#out + 1] = payload
end
return out
