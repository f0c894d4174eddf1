-- purge.lua: EchoMQ protocol v1. Deletes finished jobs older than a bound: the oldest members of
-- `done`, `dead` or `cancelled` whose score (finished, buried or cancelled at) is at or before
-- server now − age, with their rows and payloads. Bounded per call. A cancelled ghost's ""
-- marker in `data` stays until claim drops its id (as the retention trims leave it).
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:<status>   the zset of ARGV[2]: done, dead or cancelled
-- KEYS[3]  emq:{q}:data       hash id -> payload
-- KEYS[4]  emq:{q}:job:       prefix of job rows
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  `done`, `dead` or `cancelled`
-- ARGV[3]  age in ms (decimal integer 0..315360000000): jobs finished at least this long ago go
-- ARGV[4]  the most jobs to delete (decimal integer 1..1000), oldest first
-- Returns: { purged, more }: more = 1 when older jobs than the bound remain.
-- Errors:  EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for the queue
--          of KEYS[1] and the status, a number out of range), EMQ_VERSION, EMQ_WRONGTYPE.
if #KEYS ~= 4 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 4 keys and 4 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local status = ARGV[2]
if status ~= 'done' and status ~= 'dead' and status ~= 'cancelled' then
  return redis.error_reply('EMQ_BAD_ARG status must be done, dead or cancelled')
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. status or KEYS[3] ~= b .. 'data' or KEYS[4] ~= b .. 'job:' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, ' .. status .. ', data, job: of one queue, in this order')
end
local age, limit = int(ARGV[3], 0, 315360000000), int(ARGV[4], 1, 1000)
if not age then return redis.error_reply('EMQ_BAD_ARG age must be 0..315360000000 ms') end
if not limit then return redis.error_reply('EMQ_BAD_ARG limit must be 1..1000') end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
for _, kt in ipairs({ { KEYS[2], 'zset' }, { KEYS[3], 'hash' } }) do
  local t = redis.call('TYPE', kt[1])['ok']
  if t ~= 'none' and t ~= kt[2] then return redis.error_reply('EMQ_WRONGTYPE ' .. kt[1] .. ' is a ' .. t .. ', not a ' .. kt[2]) end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGE', KEYS[2], '-inf', now - age, 'BYSCORE', 'LIMIT', 0, limit + 1)
local more = 0
if #ids > limit then ids[#ids] = nil; more = 1 end
if #ids == 0 then return { 0, 0 } end
local pays = redis.call('HMGET', KEYS[3], unpack(ids))
local gone = {}
for i = 1, #ids do
  redis.call('DEL', KEYS[4] .. ids[i])
  if pays[i] ~= '' then gone[#gone + 1] = ids[i] end
end
redis.call('ZREM', KEYS[2], unpack(ids))
if #gone > 0 then redis.call('HDEL', KEYS[3], unpack(gone)) end
return { #ids, more }
