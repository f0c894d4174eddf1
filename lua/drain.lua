-- drain.lua: EchoMQ protocol v1. Drops waiting jobs: the oldest `limit` ids of the queue's
-- pending lists (the priority levels highest first, then the group lanes of the ring, then
-- `pending`) are popped and each job is removed with its row, payload and own options. A flow
-- child's parent is told the child ended `cancelled` (its hand-off `d:<id>` is written to the
-- outbox, as cancel.lua writes it). Ghosts met on the way are dropped as claim drops them
-- (their payload back to `data`, meta `ghosts` − 1). Scheduled and active jobs are not touched.
-- Bounded per call: at most `limit` ids popped, at most 1000 ring entries read.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (`lanes`, `ghosts`)
-- KEYS[2]  emq:{q}:pending    list of pending ids (level p 1..9: `<pending>:<p>`, same slot)
-- KEYS[3]  emq:{q}:data       hash id -> payload
-- KEYS[4]  emq:{q}:opts       hash id -> the job's own options
-- KEYS[5]  emq:{q}:job:       prefix of job rows
-- KEYS[6]  emq:{q}:levels     zset of the priority levels with ids
-- KEYS[7]  emq:{q}:groups     the ring of lanes (group `g`: list `emq:{q}:group:<g>`)
-- KEYS[8]  emq:{q}:outbox     flows: the hand-offs this queue owes
-- KEYS[9]  emq:{q}:outdue     flows: entry id -> due at
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  the most ids to pop (decimal integer 1..1000)
-- Returns: { drained, more }: the jobs removed, and 1 when the call stopped at its limit.
-- Errors:  EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for the queue
--          of KEYS[1], a limit out of range), EMQ_VERSION, EMQ_WRONGTYPE. Every check and read
--          comes before the first write.
if #KEYS ~= 9 or #ARGV ~= 2 then return redis.error_reply('EMQ_BAD_ARG expected 9 keys and 2 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'pending' or KEYS[3] ~= b .. 'data'
  or KEYS[4] ~= b .. 'opts' or KEYS[5] ~= b .. 'job:' or KEYS[6] ~= b .. 'levels'
  or KEYS[7] ~= b .. 'groups' or KEYS[8] ~= b .. 'outbox' or KEYS[9] ~= b .. 'outdue' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, pending, data, opts, job:, levels, groups, outbox, outdue of one queue, in this order')
end
local s = ARGV[2]
if type(s) ~= 'string' or #s > 4 or not string.match(s, '^[1-9]%d*$') or tonumber(s) > 1000 then
  return redis.error_reply('EMQ_BAD_ARG limit must be 1..1000')
end
local left = tonumber(s)
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'lanes')
if meta.err then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' is not a hash') end
if meta[1] and meta[1] ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta[1] .. ', script speaks ' .. V)
end
local function wrongType(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' is a ' .. t .. ', not a ' .. want)
  end
end
local e
for _, kt in ipairs({ { KEYS[3], 'hash' }, { KEYS[4], 'hash' }, { KEYS[6], 'zset' }, { KEYS[7], 'list' }, { KEYS[8], 'hash' }, { KEYS[9], 'zset' } }) do
  e = wrongType(kt[1], kt[2])
  if e then return e end
end
-- The lists, in drain order: levels 9..1, the group lanes of the ring, level 0.
local lists = {}
if meta[2] == '1' then
  local lv = redis.call('ZRANGE', KEYS[6], 0, -1)
  for i = #lv, 1, -1 do lists[#lists + 1] = { KEYS[2] .. ':' .. lv[i], lv[i] } end
  local ring, seen = redis.call('LRANGE', KEYS[7], -1000, -1), {}
  for i = #ring, 1, -1 do
    local g = ring[i]
    if g ~= '' and not seen[g] then seen[g] = true; lists[#lists + 1] = { b .. 'group:' .. g, false } end
  end
end
lists[#lists + 1] = { KEYS[2], false }
local picks, ids = {}, {}
for i = 1, #lists do
  if left == 0 then break end
  e = wrongType(lists[i][1], 'list')
  if e then return e end
  local got = redis.call('LRANGE', lists[i][1], -left, -1)
  if #got > 0 then
    picks[#picks + 1] = { lists[i][1], #got, lists[i][2] }
    for j = #got, 1, -1 do ids[#ids + 1] = got[j] end
    left = left - #got
  end
end
if #ids == 0 then return { 0, 0 } end
local pays = redis.call('HMGET', KEYS[3], unpack(ids))
local rows = {}
for i = 1, #ids do
  local row = KEYS[5] .. ids[i]
  e = wrongType(row, 'hash')
  if e then return e end
  rows[i] = redis.call('HMGET', row, 'parent', 'payload')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Writes.
for i = 1, #picks do
  redis.call('RPOP', picks[i][1], picks[i][2])
  if picks[i][3] and redis.call('LLEN', picks[i][1]) == 0 then redis.call('ZREM', KEYS[6], picks[i][3]) end
end
local drained, ghosts, boxed = 0, 0, 0
for i = 1, #ids do
  local id, p, row = ids[i], pays[i], KEYS[5] .. ids[i]
  if p == '' then
    ghosts = ghosts + 1
    if rows[i][2] then
      redis.call('HSET', KEYS[3], id, rows[i][2])
      redis.call('HDEL', row, 'payload')
    else
      redis.call('HDEL', KEYS[3], id)
    end
  elseif p then
    if rows[i][1] then
      redis.call('HSET', KEYS[8], 'd:' .. id, 'd ' .. rows[i][1] .. ' ' .. id .. ' cancelled drained')
      redis.call('ZADD', KEYS[9], now, 'd:' .. id)
      boxed = boxed + 1
    end
    redis.call('DEL', row)
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    drained = drained + 1
  end
end
if ghosts > 0 then redis.call('HINCRBY', KEYS[1], 'ghosts', -ghosts) end
if boxed > 0 then redis.call('SPUBLISH', KEYS[8], boxed) end
return { drained, left == 0 and 1 or 0 }
