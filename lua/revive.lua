-- revive.lua: EchoMQ protocol v1. Retries dead jobs by hand: each leaves the morgue with a fresh
-- set of attempts (row `attempts` = 0, `finished` removed, its last `error` kept) and becomes
-- due now in `scheduled` (status `scheduled`), so the next claim promotes it into its lane as it
-- promotes any retry (its priority or group kept). One wake marker is pushed when `wake` is empty.
-- Bounded per call: one id, or the oldest `limit` dead jobs.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:dead       zset id -> buried at (the morgue)
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at (ms)
-- KEYS[4]  emq:{q}:wake       list that idle consumers block on
-- KEYS[5]  emq:{q}:job:       prefix of job rows
-- KEYS[6]  emq:{q}:job:<id>   (mode `id` only) the job's row
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  `id` or `all`
-- ARGV[3]  mode `id`: the job id; mode `all`: the most jobs to retry (decimal integer 1..1000),
--          oldest buried first
-- Returns: { retried, more }: mode `id`: {1, 0} retried / {0, 0} the job exists but is not dead
--          / {-1, 0} no such job; mode `all`: the count retried and 1 when dead jobs remain.
-- Errors:  EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for the queue
--          of KEYS[1], KEYS[6] not the row of the id, a limit out of range), EMQ_VERSION,
--          EMQ_BAD_ID, EMQ_WRONGTYPE. Every check and read comes before the first write.
local V = '1'
if ARGV[2] ~= 'id' and ARGV[2] ~= 'all' then return redis.error_reply('EMQ_BAD_ARG the mode must be id or all') end
if #ARGV ~= 3 or (ARGV[2] == 'id' and #KEYS ~= 6) or (ARGV[2] == 'all' and #KEYS ~= 5) then
  return redis.error_reply('EMQ_BAD_ARG expected 3 arguments, and 6 keys (mode id) or 5 (mode all)')
end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'dead' or KEYS[3] ~= b .. 'scheduled'
  or KEYS[4] ~= b .. 'wake' or KEYS[5] ~= b .. 'job:' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, dead, scheduled, wake, job: (and the row) of one queue, in this order')
end
local function badId(id)
  if #id ~= 14 or not string.match(id, '^job[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
local ids
if ARGV[2] == 'id' then
  if badId(ARGV[3]) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
  if KEYS[6] ~= KEYS[5] .. ARGV[3] then return redis.error_reply('EMQ_BAD_ARG KEYS[6] is not the row of ' .. ARGV[3]) end
else
  local s = ARGV[3]
  if type(s) ~= 'string' or #s > 4 or not string.match(s, '^[1-9]%d*$') or tonumber(s) > 1000 then
    return redis.error_reply('EMQ_BAD_ARG limit must be 1..1000')
  end
end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
for _, kt in ipairs({ { KEYS[2], 'zset' }, { KEYS[3], 'zset' }, { KEYS[4], 'list' } }) do
  local t = redis.call('TYPE', kt[1])['ok']
  if t ~= 'none' and t ~= kt[2] then return redis.error_reply('EMQ_WRONGTYPE ' .. kt[1] .. ' is a ' .. t .. ', not a ' .. kt[2]) end
end
local more = 0
if ARGV[2] == 'id' then
  local rt = redis.call('TYPE', KEYS[6])['ok']
  if rt ~= 'none' and rt ~= 'hash' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[6] .. ' is not a hash') end
  if not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
    return { rt == 'hash' and 0 or -1, 0 }
  end
  ids = { ARGV[3] }
else
  local n = tonumber(ARGV[3])
  ids = redis.call('ZRANGE', KEYS[2], 0, n)
  if #ids > n then ids[#ids] = nil; more = 1 end
  for i = 1, #ids do
    local rt = redis.call('TYPE', KEYS[5] .. ids[i])['ok']
    if rt ~= 'none' and rt ~= 'hash' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[5] .. ids[i] .. ' is not a hash') end
  end
end
if #ids == 0 then return { 0, more } end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[2], unpack(ids))
local z = {}
for i = 1, #ids do
  local row = KEYS[5] .. ids[i]
  redis.call('HSET', row, 'status', 'scheduled', 'attempts', '0')
  redis.call('HDEL', row, 'finished')
  z[2 * i - 1] = now
  z[2 * i] = ids[i]
end
redis.call('ZADD', KEYS[3], unpack(z))
if redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
return { #ids, more }
