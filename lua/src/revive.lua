-- Retries dead jobs by hand: each leaves the morgue with a fresh set of attempts (row `attempts`
-- = 0, `finished` removed, its last `error` kept) and becomes due now in `scheduled` (status
-- `scheduled`), so the next claim promotes it into its lane as it promotes any retry (its
-- priority or group kept). One wake marker is pushed when `wake` is empty. Bounded per call: one
-- id, or the oldest `limit` dead jobs.
-- Flag allow-oom: it moves jobs already held (their rows and ids) from the morgue to `scheduled`,
-- adding nothing but one wake marker, so it cannot grow memory without bound.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key dead emq:{q}:dead zset id -> buried at (the morgue)
-- @key scheduled emq:{q}:scheduled zset id -> run-at (ms)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key job emq:{q}:job: prefix of job rows
-- @key row? emq:{q}:job:<id> (mode `id` only) the job's row
-- @arg version version the protocol version
-- @arg mode id|all one job, or the oldest dead jobs
-- @arg target text mode `id`: the job id; mode `all`: the most jobs to retry (decimal integer
--   1..1000), oldest buried first
-- @mode id KEYS meta, dead, scheduled, wake, job:, the row; ARGV version, `id`, the job id
-- @mode all KEYS meta, dead, scheduled, wake, job:; ARGV version, `all`, the limit
-- @returns { retried, more }: mode `id`: {1, 0} retried / {0, 0} the job exists but is not dead /
--   {-1, 0} no such job; mode `all`: the count retried and 1 when dead jobs remain.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (an unknown mode, counts, a key that is not the one the key
--   grammar spells for the queue of KEYS[1], KEYS[6] not the row of the id, a limit out of
--   range), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check and read comes before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta clock limit
local mode = need_word(ARGV[2], { id = true, all = true }, 'the mode')
need(#ARGV == 3 and #KEYS == (mode == 'id' and 6 or 5), 'expected 3 arguments, and 6 keys (mode id) or 5 (mode all)')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'dead', 'scheduled', 'wake', 'job:' })
local n
if mode == 'id' then
  need_row(KEYS[6], KEYS[5], need_id(ARGV[3]))
else
  n = need_limit(ARGV[3])
end
queue_meta(KEYS[1])
need_types({ KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'list' })
local ids, more = nil, 0
if mode == 'id' then
  local rt = redis.call('TYPE', KEYS[6])['ok']
  if rt ~= 'none' and rt ~= 'hash' then fail('WRONGTYPE', KEYS[6] .. ' is a ' .. rt .. ', not a hash') end
  if not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
    return { rt == 'hash' and 0 or -1, 0 }
  end
  ids = { ARGV[3] }
else
  ids = redis.call('ZRANGE', KEYS[2], 0, n)
  if #ids > n then ids[#ids] = nil; more = 1 end
  for i = 1, #ids do need_type(KEYS[5] .. ids[i], 'hash') end
end
if #ids == 0 then return { 0, more } end
local now = now_ms()
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
