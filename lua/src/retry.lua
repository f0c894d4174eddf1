-- Retry-or-bury for one active job, fenced by its token. The job is scheduled again after its
-- backoff (computed here, on the server clock), or moved to the morgue (`dead`) when it has used
-- its last attempt or the error is fatal. The morgue is capped: its oldest rows beyond the cap are
-- deleted. A job flagged by cancel while active (`cancel` = 1) ends `cancelled` instead (kept in
-- the cancelled set, trimmed to meta `keepc`, default 1000). A buried or cancelled job whose row
-- names a parent (a flow child) writes its hand-off `d:<id>` = "d <queue> <parent id> <id>
-- <failed|cancelled> <error>" to this queue's outbox (docs/flows.md).
-- Flags: allow-oom. It moves work forward and frees memory (ZREM from active, morgue and
-- cancelled trims); what it adds is bounded (one error text, one outbox entry), so refusing it
-- under OOM would only strand an active job.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key dead emq:{q}:dead zset id -> buried at (the morgue)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key data emq:{q}:data hash id -> payload (for jobs trimmed out of the morgue)
-- @key rows emq:{q}:job: prefix of job rows (for rows trimmed out of the morgue)
-- @key row emq:{q}:job:<id> the job's row
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at (for a job flagged by cancel)
-- @key outbox? emq:{q}:outbox with outdue; required when the row names a parent
-- @key outdue? emq:{q}:outdue with outbox; required when the row names a parent
-- @arg version version the protocol version
-- @arg id id:job the job
-- @arg token token the fencing token (decimal digits)
-- @arg error bytes:0..65536 the error text (at most 65536 bytes)
-- @arg fatal 0|1 "1" when the error is fatal (straight to the morgue), else "0"
-- @arg max-attempts 1..1000 default max attempts, used when the row has none
-- @arg backoff backoff default backoff ("f:<ms>" or "e:<ms>", ms 0..86400000), used when the
--   row has none
-- @arg morgue-cap 1..1000000 the morgue cap
-- @arg worker? bytes:0..128 (optional, protocol v2 additive) who ran the attempt (TypeScript:
--   `<host name>:<pid>`), no control characters; "" or absent: unknown
-- @arg stack? bytes:0..2048 (optional, after worker) the error's stack text; "" or absent: none
-- Every call that ends the attempt (scheduled again, buried or cancelled) appends its record to
-- the row's attempt history `hist` (attempts.lua: outcome `failed`, the row's `started`, now, the
-- worker, the error cut to 1024 bytes, the stack); a refused call (stale token) writes nothing.
-- @returns { 0 } refused (stale token or not active); { 1, runAt } scheduled again; { 2, buriedAt }
--   moved to the morgue; { 3, cancelledAt } cancelled (it was flagged).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[8] not the row of the id, a row
--   naming a parent without the outbox keys), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes
--   before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta events cancelled morgue flow-child attempts
need((#KEYS == 10 or #KEYS == 12) and #ARGV >= 8 and #ARGV <= 10, 'expected 10 (or 12) keys and 8 to 10 arguments')
local b, id, token, err, fatal = queue_base(KEYS[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5]
need_keys(KEYS, b, { 'meta', 'active', 'scheduled', 'dead', 'wake', 'data', 'job:', 'job:' .. id, 'events', 'cancelled' })
local box, due = outbox_keys(KEYS, 11, b)
local m = queue_meta(KEYS[1])
need_id(id)
need_token(token)
need_bytes(err, 0, 65536, 'the error text')
need_word(fatal, { ['0'] = true, ['1'] = true }, 'the fatal flag')
local defMax, defBackoff = need_int(ARGV[6], 1, 1000, 'default max attempts'), ARGV[7]
local _, defBase = string.match(defBackoff, '^([fe]):(%d+)$')
need(int(defBase, 0, 86400000), 'default backoff must be f:<ms> or e:<ms>, ms 0..86400000')
local cap = need_int(ARGV[8], 1, 1000000, 'the morgue cap')
local worker, stack = ARGV[9], ARGV[10]
need_attempt_args(worker, stack)

local row, cancelled = KEYS[8], KEYS[10]
local cur = checked(redis.pcall('HMGET', row, 'status', 'token', 'attempts', 'max', 'backoff', 'cancel', 'parent', 'started', 'hist'), row)
if cur[1] ~= 'active' or cur[2] ~= token then return { 0 } end
local att = tonumber(cur[3]) or 1
local max = tonumber(cur[4]) or defMax
local outcome = 1
if cur[6] == '1' then outcome = 3 elseif fatal == '1' or att >= max then outcome = 2 end
need_types({ KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'list', KEYS[6], 'hash', cancelled, 'zset' })
if m.elog > 0 then need_type(KEYS[9], 'stream') end
local parent = outcome ~= 1 and cur[7]
if parent then need_outbox(box, due, 'the row names a parent') end
local now = now_ms()
redis.call('ZREM', KEYS[2], id)
local hist = hist_push(cur[9], att, cur[8], now, 'failed', worker, err, stack)
if parent then
  tell_parent(box, due, parent, id, outcome == 3 and 'cancelled' or 'failed', err)
  redis.call('SPUBLISH', box, 1)
end
if outcome == 3 then
  end_cancelled(row, cancelled, id, now, err, hist)
  trim_cancelled(cancelled, KEYS[6], KEYS[7], cancelled_keep(m.keepc), m.refs == '1')
  emit(KEYS[9], m.elog, 'cancelled', { id })
  return { 3, now }
end
if outcome == 2 then
  bury(row, KEYS[4], id, err, now, hist)
  trim_morgue(KEYS[4], KEYS[6], KEYS[7], cap, m.refs == '1')
  emit(KEYS[9], m.elog, 'buried', { id })
  return { 2, now }
end
local kind, base = string.match(cur[5] or defBackoff, '^([fe]):(%d+)$')
local delay = tonumber(base) or 0
if kind == 'e' then delay = delay * math.pow(2, att - 1) end
if delay > 86400000 then delay = 86400000 end -- never back off more than a day
local runAt = now + math.floor(delay)
redis.call('HSET', row, 'status', 'scheduled', 'error', err, 'hist', hist)
redis.call('ZADD', KEYS[3], runAt, id)
if redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
emit(KEYS[9], m.elog, 'retried', { id })
return { 1, runAt }
