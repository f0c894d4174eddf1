-- Moves jobs whose lease expired (on the server clock) back to the front of pending, or to the
-- morgue when they have used their last attempt. A job flagged by cancel while active (`cancel` =
-- 1) ends `cancelled` instead (kept in the cancelled set, trimmed to meta `keepc`, default 1000).
-- Bounded work per call; any live consumer runs it, nothing depends on one special process. The
-- old holder's token stops being valid the moment the row leaves `active`.
--
-- A row with `prio` (a job of priority level p, docs/protocol.md §5) goes back to `<pending>:<p>`
-- (derived from the pending key, same slot) and p to `emq:{q}:levels`; in lanes mode a row with
-- `group` g goes back to `emq:{q}:group:<g>` (a lane that was empty joins the ring `groups`).
-- A buried or cancelled job whose row names a parent (a flow child) writes its hand-off `d:<id>` =
-- "d <queue> <parent id> <id> <failed|cancelled> <error>" to this queue's outbox (docs/flows.md).
-- Flags: allow-oom. It frees leases and memory (active entries, morgue and cancelled trims) and
-- adds at most a bounded error text and outbox entry per reaped job: refusing it under OOM would
-- leave expired jobs stuck in active.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key pending emq:{q}:pending list of pending ids
-- @key dead emq:{q}:dead zset id -> buried at (the morgue)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key data emq:{q}:data hash id -> payload (for jobs trimmed out of the morgue)
-- @key rows emq:{q}:job: prefix of job rows
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at (for jobs flagged by cancel)
-- @key outbox? emq:{q}:outbox with outdue; required when a reaped row names a parent
-- @key outdue? emq:{q}:outdue with outbox; required when a reaped row names a parent
-- @arg version version the protocol version
-- @arg limit 1..1000 the most jobs to reap in this call
-- @arg max-attempts 1..1000 default max attempts, used when the row has none
-- @arg morgue-cap 1..1000000 the morgue cap
-- Every reaped attempt appends its record to the row's attempt history `hist` (attempts.lua:
-- outcome `lease-expired`, the row's `started`, now, no worker, error "lease expired", no stack).
-- @returns { requeued, buried, cancelled } (integers: how many jobs took each way), followed by
--   one pair `id, attempt` per reaped job (the attempt whose lease expired): the requeued jobs
--   first, then the buried, then the cancelled, each in reap order.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a key that is not the one
--   the key grammar spells for the queue of KEYS[1], a reaped row naming a parent without the
--   outbox keys), EMQ_WRONGTYPE. Every check comes before the first write.
-- @flags allow-oom
-- @uses args keys types meta events cancelled morgue lanes-back flow-child attempts
need((#KEYS == 9 or #KEYS == 11) and #ARGV == 4, 'expected 9 (or 11) keys and 4 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'active', 'pending', 'dead', 'wake', 'data', 'job:', 'events', 'cancelled' })
local box, due = outbox_keys(KEYS, 10, b)
local m = queue_meta(KEYS[1])
local limit = need_int(ARGV[2], 1, 1000, 'the reap limit')
local defMax = need_int(ARGV[3], 1, 1000, 'default max attempts')
local cap = need_int(ARGV[4], 1, 1000000, 'the morgue cap')
local active, pending, dead, prefix, events, cancelled = KEYS[2], KEYS[3], KEYS[4], KEYS[7], KEYS[8], KEYS[9]

local now = now_ms()
local expired = checked(redis.pcall('ZRANGEBYSCORE', active, '-inf', now, 'LIMIT', 0, limit), active)
if #expired == 0 then return { 0, 0, 0 } end
need_types({ pending, 'list', dead, 'zset', KEYS[5], 'list', KEYS[6], 'hash', cancelled, 'zset' })
if m.elog > 0 then need_type(events, 'stream') end
-- Every row is read before the first write, so a row of the wrong type refuses the whole call.
local rows, anyParent = {}, false
for i = 1, #expired do
  local row = prefix .. expired[i]
  local cur = checked(redis.pcall('HMGET', row, 'attempts', 'max', 'status', 'cancel', 'parent', 'prio', 'group', 'started', 'hist'), row)
  rows[i] = cur
  if m.lanes == '1' and cur[3] == 'active' then need_lane_types(b, pending, cur[6], cur[7]) end
  if cur[5] and cur[3] == 'active' then anyParent = true end
end
if anyParent then need_outbox(box, due, 'a reaped row names a parent') end
local handed = 0
local requeuedIds, buriedIds, cancelledIds, attemptOf = {}, {}, {}, {}
for i = 1, #expired do
  local id, cur = expired[i], rows[i]
  local row = prefix .. id
  redis.call('ZREM', active, id)
  if cur[3] == 'active' then
    local att, max = tonumber(cur[1]) or 1, tonumber(cur[2]) or defMax
    attemptOf[id] = att
    local hist = hist_push(cur[9], att, cur[8], now, 'lease-expired', nil, 'lease expired', nil)
    local outcome, err
    if cur[4] == '1' then
      outcome, err = 'cancelled', 'lease expired'
      end_cancelled(row, cancelled, id, now, err, hist)
      cancelledIds[#cancelledIds + 1] = id
    elseif att >= max then
      outcome, err = 'failed', 'lease expired after attempt ' .. att
      bury(row, dead, id, err, now, hist)
      buriedIds[#buriedIds + 1] = id
    else
      redis.call('HSET', row, 'status', 'pending', 'error', 'lease expired', 'hist', hist)
      back_in_line(m.lanes, b, pending, id, cur[6], cur[7]) -- its lane, first in line again
      requeuedIds[#requeuedIds + 1] = id
    end
    if outcome and cur[5] then -- a flow child hands its end to the parent's queue
      tell_parent(box, due, cur[5], id, outcome, err)
      handed = handed + 1
    end
  end
end
if handed > 0 then redis.call('SPUBLISH', box, handed) end
emit(events, m.elog, 'requeued', requeuedIds)
emit(events, m.elog, 'buried', buriedIds)
emit(events, m.elog, 'cancelled', cancelledIds)
if #buriedIds > 0 then trim_morgue(dead, KEYS[6], prefix, cap, m.refs == '1') end
if #cancelledIds > 0 then trim_cancelled(cancelled, KEYS[6], prefix, cancelled_keep(m.keepc), m.refs == '1') end
if #requeuedIds > 0 and redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
local out = { #requeuedIds, #buriedIds, #cancelledIds }
for _, list in ipairs({ requeuedIds, buriedIds, cancelledIds }) do
  for j = 1, #list do
    out[#out + 1] = list[j]
    out[#out + 1] = attemptOf[list[j]]
  end
end
return out
