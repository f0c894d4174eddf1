-- remove.lua: EchoMQ protocol v1. Removes one job with everything it holds (row, payload, own
-- options, its index entry) in O(1) whatever the backlog. A pending job's id is not searched for
-- in its list (no LREM): it becomes a ghost as cancel.lua leaves one (`data` = "", meta `ghosts`
-- + 1, and no row), which claim drops when it pops it, deleting the `data` marker. Refused
-- (nothing written): an active job (cancel it first), a `waiting` flow parent, and a flow child
-- that has not finished (its parent waits for its outcome: cancel it instead).
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (`ghosts`)
-- KEYS[2]  emq:{q}:scheduled  zset id -> run-at
-- KEYS[3]  emq:{q}:done       zset id -> finished at
-- KEYS[4]  emq:{q}:dead       zset id -> buried at
-- KEYS[5]  emq:{q}:cancelled  zset id -> cancelled at
-- KEYS[6]  emq:{q}:data       hash id -> payload
-- KEYS[7]  emq:{q}:opts       hash id -> the job's own options (until its first claim)
-- KEYS[8]  emq:{q}:job:       prefix of job rows
-- KEYS[9]  emq:{q}:job:<id>   the job's row
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- Returns: 1 removed / 0 refused (active, waiting, or an unfinished flow child) / -1 no such job.
-- Errors:  EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for the queue
--          of KEYS[1], KEYS[9] not the row of the id), EMQ_VERSION, EMQ_BAD_ID, EMQ_WRONGTYPE.
--          Every check and read comes before the first write.
if #KEYS ~= 9 or #ARGV ~= 2 then return redis.error_reply('EMQ_BAD_ARG expected 9 keys and 2 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'scheduled' or KEYS[3] ~= b .. 'done'
  or KEYS[4] ~= b .. 'dead' or KEYS[5] ~= b .. 'cancelled' or KEYS[6] ~= b .. 'data'
  or KEYS[7] ~= b .. 'opts' or KEYS[8] ~= b .. 'job:' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, scheduled, done, dead, cancelled, data, opts, job:, the row of one queue, in this order')
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
local id, row = ARGV[2], KEYS[9]
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if row ~= KEYS[8] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[9] is not the row of ' .. id) end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
local types = { KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash', row, 'hash' }
for i = 1, #types, 2 do
  local t = redis.call('TYPE', types[i])['ok']
  if t ~= 'none' and t ~= types[i + 1] then
    return redis.error_reply('EMQ_WRONGTYPE ' .. types[i] .. ' is a ' .. t .. ', not a ' .. types[i + 1])
  end
end
local cur = redis.call('HMGET', row, 'status', 'parent')
local status, parent = cur[1], cur[2]
local payload = redis.call('HGET', KEYS[6], id)
if not status then
  if redis.call('ZSCORE', KEYS[2], id) then
    status = 'scheduled'
  elseif payload and payload ~= '' then
    status = 'pending'
  else
    return -1
  end
end
if status == 'active' or status == 'waiting' then return 0 end
if parent and (status == 'pending' or status == 'scheduled') then return 0 end
local set = ({ scheduled = KEYS[2], done = KEYS[3], dead = KEYS[4], cancelled = KEYS[5] })[status]
if status == 'pending' then
  -- A ghost without a row: claim drops the id and deletes the marker.
  redis.call('HSET', KEYS[6], id, '')
  redis.call('HINCRBY', KEYS[1], 'ghosts', 1)
elseif set then
  redis.call('ZREM', set, id)
  -- A cancelled ghost still in its list keeps its "" marker until claim drops the id.
  if payload ~= '' then redis.call('HDEL', KEYS[6], id) end
else
  return 0
end
redis.call('HDEL', KEYS[7], id)
redis.call('DEL', row)
return 1
