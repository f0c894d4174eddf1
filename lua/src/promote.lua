-- Makes a scheduled job (delayed, or waiting for its retry backoff) due now: its run-at becomes
-- the server's now, and one wake marker is pushed (when `wake` is empty), so the next claim
-- promotes it to pending as it promotes any due job (its priority or group kept). O(log n).
-- Flag allow-oom: it moves work forward (a run-at rescored in place, at most one wake marker),
-- so it cannot grow memory without bound.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key scheduled emq:{q}:scheduled zset id -> run-at (ms)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key data emq:{q}:data hash id -> payload
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @returns 1 promoted (also a job already due) / 0 the job exists but is not scheduled / -1 no
--   such job (nothing written but by 1).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1], KEYS[6] not the row of the id), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check
--   comes before the first write.
-- @flags allow-oom
-- @uses ids keys types meta clock
need(#KEYS == 6 and #ARGV == 2, 'expected 6 keys and 2 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'scheduled', 'wake', 'data', 'job:' })
local id = need_id(ARGV[2])
need_row(KEYS[6], KEYS[5], id)
queue_meta(KEYS[1])
local score = checked(redis.pcall('ZSCORE', KEYS[2], id), KEYS[2])
need_type(KEYS[3], 'list')
if not score then
  local d = checked(redis.pcall('HEXISTS', KEYS[4], id), KEYS[4])
  local r = redis.pcall('EXISTS', KEYS[6])
  if d == 1 or r == 1 then return 0 end
  return -1
end
local now = now_ms()
if tonumber(score) > now then redis.call('ZADD', KEYS[2], 'XX', now, id) end
if redis.call('LLEN', KEYS[3]) == 0 then redis.call('LPUSH', KEYS[3], '1') end
return 1
