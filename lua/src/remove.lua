-- Removes one job with everything it holds (row, payload, own options, its index entry) in O(1)
-- whatever the backlog. A pending job's id is not searched for in its list (no LREM): it becomes
-- a ghost as cancel.lua leaves one (`data` = "", meta `ghosts` + 1, and no row), which claim
-- drops when it pops it, deleting the `data` marker. Refused (nothing written): an active job
-- (cancel it first), a `waiting` flow parent, and a flow child that has not finished (its parent
-- waits for its outcome: cancel it instead).
-- Dedup: a removed job whose enqueue wrote `keyof:<id>` (an enqueue with a dedup mode) frees its
-- key (deleted when it still names this job) and the keyof.
-- Flag allow-oom: it only frees (a pending job's payload becomes the "" marker), so it is how an
-- operator frees memory when it is full.
--
-- @key meta emq:{q}:meta queue meta hash (`ghosts`)
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key done emq:{q}:done zset id -> finished at
-- @key dead emq:{q}:dead zset id -> buried at
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> the job's own options (until its first claim)
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @returns 1 removed / 0 refused (active, waiting, or an unfinished flow child) / -1 no such job.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1], KEYS[9] not the row of the id), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check
--   and read comes before the first write.
-- @flags allow-oom
-- @uses ids keys types meta dedup-free refs
need(#KEYS == 9 and #ARGV == 2, 'expected 9 keys and 2 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'scheduled', 'done', 'dead', 'cancelled', 'data', 'opts', 'job:' })
local id, row = need_id(ARGV[2]), KEYS[9]
need_row(row, KEYS[8], id)
local rm = queue_meta(KEYS[1])
need_types({ KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash', row, 'hash' })
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
local freed = dedup_key_of(queue_base(KEYS[1]), id) -- its dedup key, freed with the job
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
dedup_free(freed)
refs_drop(queue_base(KEYS[1]), { id }, rm.refs == '1')
return 1
