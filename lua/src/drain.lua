-- Drops waiting jobs: the oldest `limit` ids of the queue's pending lists (the priority levels
-- highest first, then the group lanes of the ring, then `pending`) are popped and each job is
-- removed with its row, payload and own options. A flow child's parent is told the child ended
-- `cancelled` (its hand-off `d:<id>` is written to the outbox, as cancel.lua writes it). Ghosts
-- met on the way are dropped as claim drops them (their payload back to `data`, meta `ghosts` −
-- 1). Scheduled and active jobs are not touched. Bounded per call: at most `limit` ids popped, at
-- most 1000 ring entries read. A level list is `<pending>:<p>` (p 1..9) and a group lane
-- `emq:{q}:group:<g>`, spelt from the queue's base (same slot).
-- Flag allow-oom: it frees jobs; the only thing it adds is one small outbox entry per drained
-- flow child (bounded by the limit, and far less than the job it frees).
--
-- @key meta emq:{q}:meta queue meta hash (`lanes`, `ghosts`)
-- @key pending emq:{q}:pending list of pending ids (level p 1..9: `<pending>:<p>`, same slot)
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> the job's own options
-- @key job emq:{q}:job: prefix of job rows
-- @key levels emq:{q}:levels zset of the priority levels with ids
-- @key groups emq:{q}:groups the ring of lanes (group `g`: list `emq:{q}:group:<g>`)
-- @key outbox emq:{q}:outbox flows: the hand-offs this queue owes
-- @key outdue emq:{q}:outdue flows: entry id -> due at
-- @arg version version the protocol version
-- @arg limit 1..1000 the most ids to pop
-- @returns { drained, more }: the jobs removed, and 1 when the call stopped at its limit.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1], a limit out of range), EMQ_WRONGTYPE. Every check and read comes before
--   the first write.
-- @flags allow-oom
-- @uses keys types meta flow-child limit refs
need(#KEYS == 9 and #ARGV == 2, 'expected 9 keys and 2 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'pending', 'data', 'opts', 'job:', 'levels', 'groups', 'outbox', 'outdue' })
local left = need_limit(ARGV[2])
local dm = queue_meta(KEYS[1])
local lanes = dm.lanes
need_types({ KEYS[3], 'hash', KEYS[4], 'hash', KEYS[6], 'zset', KEYS[7], 'list', KEYS[8], 'hash', KEYS[9], 'zset' })
-- The lists, in drain order: levels 9..1, the group lanes of the ring, level 0.
local lists = {}
if lanes == '1' then
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
  need_type(lists[i][1], 'list')
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
  need_type(row, 'hash')
  rows[i] = redis.call('HMGET', row, 'parent', 'payload')
end
-- Writes (the clock is read at the first hand-off, if any).
for i = 1, #picks do
  redis.call('RPOP', picks[i][1], picks[i][2])
  if picks[i][3] and redis.call('LLEN', picks[i][1]) == 0 then redis.call('ZREM', KEYS[6], picks[i][3]) end
end
local drained, ghosts, boxed, gone = 0, 0, 0, {}
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
      tell_parent(KEYS[8], KEYS[9], rows[i][1], id, 'cancelled', 'drained')
      boxed = boxed + 1
    end
    redis.call('DEL', row)
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    drained = drained + 1
    gone[drained] = id
  end
end
refs_drop(b, gone, dm.refs == '1')
if ghosts > 0 then redis.call('HINCRBY', KEYS[1], 'ghosts', -ghosts) end
if boxed > 0 then redis.call('SPUBLISH', KEYS[8], boxed) end
return { drained, left == 0 and 1 or 0 }
