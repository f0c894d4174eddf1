-- Deletes finished jobs older than a bound: the oldest members of `done`, `dead` or `cancelled`
-- whose score (finished, buried or cancelled at) is at or before server now − age, with their
-- rows and payloads. Bounded per call. A cancelled ghost's "" marker in `data` stays until claim
-- drops its id (as the retention trims leave it).
-- Flag allow-oom: it only deletes, and it is how an operator frees memory when it is full.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key finished emq:{q}:<status> the zset of the status argument: done, dead or cancelled
-- @key data emq:{q}:data hash id -> payload
-- @key job emq:{q}:job: prefix of job rows
-- @arg version version the protocol version
-- @arg status done|dead|cancelled the finished set to purge
-- @arg age 0..315360000000 age in ms: jobs finished at least this long ago go
-- @arg limit 1..1000 the most jobs to delete, oldest first
-- @returns { purged, more }: more = 1 when older jobs than the bound remain.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1] and the status, a number out of range), EMQ_WRONGTYPE. Every check
--   comes before the first write.
-- @flags allow-oom
-- @uses args keys types meta clock refs
need(#KEYS == 4 and #ARGV == 4, 'expected 4 keys and 4 arguments')
local status = need_word(ARGV[2], { done = true, dead = true, cancelled = true }, 'status')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', status, 'data', 'job:' })
local age = need_int(ARGV[3], 0, 315360000000, 'age (ms)')
local limit = need_int(ARGV[4], 1, 1000, 'limit')
local pm = queue_meta(KEYS[1])
need_types({ KEYS[2], 'zset', KEYS[3], 'hash' })
local now = now_ms()
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
refs_drop(b, ids, pm.refs == '1')
return { #ids, more }
