-- Turns one due tick of a schedule into (at most) one job, and advances the schedule's next
-- tick, in one atomic step. Compare-and-set: the call names the tick it computed from (`due`)
-- and the SHA1 of the spec text it read; when the stored next tick or spec differ (another
-- instance ticked first, the schedule was replaced or removed) the call is refused with nothing
-- written. So any number of instances may race on one tick and exactly one wins. The job is left
-- exactly as enqueue.lua leaves a job (the shared fragment job-write): its payload (the spec's
-- `payload` text) in `data`, its own options in `opts`, its id in `pending` (or in `scheduled` at
-- its run-at when that is in the future), one wake marker when `wake` is empty, and the
-- `enqueued` / `scheduled` lifecycle event; claim.lua takes it from there unchanged. The spec's
-- `attempts` (1..1000) and `backoff` (`f:<ms>` / `e:<ms>`, ms 0..86400000), when present, become
-- the job's own options as in enqueue.lua.
--
-- A spec's `limit` (1..1000000000), `start` and `end` (epoch ms, 0..7258118400000), when present,
-- are enforced here on a tick that would write a job: a tick before `start` advances without a
-- job; a tick after `end`, or once the schedule's ticks wrote `limit` jobs (counted in `fires`,
-- KEYS[10], required then), writes no job and ends the schedule (its name leaves `ticks`); the
-- job that reaches the limit ends it too, and so does a `next` after `end`.
--
-- No script flags: a tick writes a new job (memory grows), so under OOM it is refused at its
-- first write, as an enqueue is.
--
-- @key meta emq:{q}:meta queue meta hash (as enqueue.lua)
-- @key pending emq:{q}:pending list of pending ids (as enqueue.lua)
-- @key scheduled emq:{q}:scheduled zset id -> run-at (as enqueue.lua)
-- @key wake emq:{q}:wake list that idle consumers block on (as enqueue.lua)
-- @key data emq:{q}:data hash id -> payload (as enqueue.lua)
-- @key opts emq:{q}:opts hash id -> "<max attempts>|<backoff>" (as enqueue.lua)
-- @key events emq:{q}:events lifecycle events (as enqueue.lua)
-- @key schedules emq:{q}:schedules hash name -> spec text
-- @key ticks emq:{q}:ticks zset name -> next tick (epoch ms)
-- @key fires? emq:{q}:fires hash name -> jobs the schedule's ticks wrote; required when the
--   stored spec has a `limit`
-- @arg version version the protocol version
-- @arg name bytes:1..100 the schedule name (1..100 bytes of [A-Za-z0-9_.-])
-- @arg sha sha1 SHA1 (40 lowercase hex digits) of the spec text the caller computed from
-- @arg due 0..7258118400000 the next tick the caller read
-- @arg next 0..7258118400000 the next tick after this call (due+1..7258118400000), or 0: the
--   schedule has no more ticks (its name leaves `ticks`, its spec stays)
-- @arg write 0|1 "1": write a job for this tick; "0": advance without a job (a missed tick skipped)
-- @arg id id:job the job id (a 14-byte `job` id; "" when write is "0")
-- @arg run-at 0..7258118400000 the job's run-at (epoch ms on the server clock; 0 or a past
--   instant = pending now); "0" when write is "0"
-- @returns 1 job written and tick advanced; 2 advanced without a job; 0 refused (stale: the
--   stored tick or spec is not the caller's, or no such schedule); -1 the job id is taken
--   (nothing written: mint another).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments or keys, a stored spec that
--   is not a JSON object with a string payload and valid options, a spec with a `limit` and no
--   `fires` key), EMQ_BAD_ID, EMQ_WRONGTYPE.
--   Every check comes before the first write.
-- @uses keys ids types meta names job-args job-write
need((#KEYS == 9 or #KEYS == 10) and #ARGV == 8, 'expected 9 (or 10) keys and 8 arguments')
local names = { 'meta', 'pending', 'scheduled', 'wake', 'data', 'opts', 'events', 'schedules', 'ticks' }
if #KEYS == 10 then names[10] = 'fires' end
need_keys(KEYS, queue_base(KEYS[1]), names)
local name, sha = ARGV[2], ARGV[3]
need(not bad_name(name), 'a schedule name is 1..100 bytes of letters, digits, _ . -')
need(#sha == 40 and string.match(sha, '^[0-9a-f]+$'), 'the spec SHA1 must be 40 lowercase hex digits')
local due, next = int(ARGV[4], 0, 7258118400000), int(ARGV[5], 0, 7258118400000)
need(due and next and (next == 0 or next > due), 'due must be 0..7258118400000 and next 0 or due+1..7258118400000')
local write, id, runAt = ARGV[6], ARGV[7], int(ARGV[8], 0, 7258118400000)
need(write == '0' or write == '1', 'the write flag must be 0 or 1')
need(runAt, 'run-at must be 0..7258118400000')
need(write == '1' or (id == '' and runAt == 0), 'a tick without a job takes no id and run-at 0')
if write == '1' then need_id(id) end

-- Reads first: every key this call writes is read (or type-checked) before anything is written.
local meta = queue_meta(KEYS[1])
local spec = checked(redis.pcall('HGET', KEYS[8], name), KEYS[8])
local tick = checked(redis.pcall('ZSCORE', KEYS[9], name), KEYS[9])
if not spec or not tick or tonumber(tick) ~= due or redis.sha1hex(spec) ~= sha then return 0 end
if write == '0' then
  if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
  return 2
end

local ok, s = pcall(cjson.decode, spec)
need(ok and type(s) == 'table' and type(s.payload) == 'string' and #s.payload > 0,
  'the stored spec of ' .. name .. ' is not a JSON object with a non-empty string payload')
local maxA, backoff = s.attempts, s.backoff
need(maxA == nil or (type(maxA) == 'number' and maxA == math.floor(maxA) and maxA >= 1 and maxA <= 1000),
  'the stored spec of ' .. name .. ' has bad attempts (1..1000)')
need(backoff == nil or (type(backoff) == 'string' and good_backoff(backoff)),
  'the stored spec of ' .. name .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
-- The window and the limit (docs/protocol.md §11).
local lim, st, en = s.limit, s.start, s['end']
local function whole(v, hi) return v == nil or (type(v) == 'number' and v == math.floor(v) and v >= 0 and v <= hi) end
need(whole(lim, 1000000000) and lim ~= 0 and whole(st, 7258118400000) and whole(en, 7258118400000),
  'the stored spec of ' .. name .. ' has a bad limit (1..1000000000), start or end (0..7258118400000)')
local fires, count = KEYS[10], 0
if lim then
  need(fires, 'the stored spec of ' .. name .. ' has a limit: the call needs the fires key (KEYS[10])')
  count = tonumber(checked(redis.pcall('HGET', fires, name), fires)) or 0
end
if (en and due > en) or (lim and count >= lim) then
  redis.call('ZREM', KEYS[9], name)
  return 2
end
if st and due < st then
  if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
  return 2
end
if (en and next > en) or (lim and count + 1 >= lim) then next = 0 end
if checked(redis.pcall('HEXISTS', KEYS[5], id), KEYS[5]) == 1 then return -1 end
local later = runAt > now_ms()
local own = maxA ~= nil or backoff ~= nil
local wakeLen = check_new_jobs(KEYS, meta.elog, true, own, false)
local queued, scheduled = later and {} or { id }, later and { id } or {}
push_new_jobs(KEYS, queued, later and { runAt, id } or {})
store_new_jobs(KEYS, { id, s.payload }, own and { id, (maxA and string.format('%d', maxA) or '') .. '|' .. (backoff or '') } or {})
stamp_version(KEYS[1], meta.v)
if lim then redis.call('HINCRBY', fires, name, 1) end
if next == 0 then redis.call('ZREM', KEYS[9], name) else redis.call('ZADD', KEYS[9], next, name) end
announce_new_jobs(KEYS, meta.elog, wakeLen, queued, scheduled)
return 1
