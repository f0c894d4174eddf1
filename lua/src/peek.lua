-- Reads one job atomically (read-only): its row, its payload and, for a job never claimed (no row
-- yet), its status derived from where its id waits and its own options.
-- Flag no-writes: it never writes, so Valkey runs it on a replica and under OOM.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> "<max attempts>|<backoff>" (until the first claim)
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @returns a flat array of bulk strings, field/value pairs: the row's fields (§3 of
--   docs/protocol.md), then `payload` when the job's data exists. A job with no row yet gets
--   `status` (`scheduled` when its id is in the scheduled set, else `pending`), `attempts` "0"
--   and, from its own options, `max` / `backoff` (and a delayed job's `prio`), and `x` its
--   extras when it has any (the fourth field of its opts: what its first claim moves to the row). An empty array
--   when no such job exists (never enqueued, or trimmed out of its retention).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing arguments, a wrong key count or a key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[6] not the row of the id),
--   EMQ_WRONGTYPE (a key holds another type), EMQ_BAD_ID.
-- @flags no-writes
-- @uses ids keys types meta
need(#KEYS == 6 and #ARGV == 2, 'expected 6 keys and 2 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'scheduled', 'data', 'opts', 'job:' })
queue_meta(KEYS[1])
local id = need_id(ARGV[2])
need_row(KEYS[6], KEYS[5], id)

local out = checked(redis.pcall('HGETALL', KEYS[6]), KEYS[6])
local payload = checked(redis.pcall('HGET', KEYS[3], id), KEYS[3])
-- "" marks a ghost (cancel.lua): a job cancelled while pending, whose payload is in its row.
if payload == '' then payload = false end
if #out == 0 then
  if not payload then return {} end
  local at = checked(redis.pcall('ZSCORE', KEYS[2], id), KEYS[2])
  local o = checked(redis.pcall('HGET', KEYS[4], id), KEYS[4])
  out = { 'status', at and 'scheduled' or 'pending', 'attempts', '0' }
  local maxA, backoff = string.match(o or '', '^(%d*)|([^|]*)')
  if maxA and maxA ~= '' then out[#out + 1] = 'max'; out[#out + 1] = maxA end
  if backoff and backoff ~= '' then out[#out + 1] = 'backoff'; out[#out + 1] = backoff end
  local prio = string.match(o or '', '^[^|]*|[^|]*|(%d)$') -- a delayed job's priority
  if prio then out[#out + 1] = 'prio'; out[#out + 1] = prio end
  local x = string.match(o or '', '^[^|]*|[^|]*|[^|]*|(.+)$') -- its extras, the fourth field
  if x then out[#out + 1] = 'x'; out[#out + 1] = x end
end
if payload then
  out[#out + 1] = 'payload'
  out[#out + 1] = payload
end
return out
