-- Cancels a job that has not started: a pending or scheduled job moves to `cancelled` (kept in a
-- bounded set). An active job is not interrupted here; its row is flagged `cancel` = 1: the holder
-- may observe it, and an attempt that ends without completing (retry, reap, release) ends the job
-- `cancelled` (a complete still completes it).
--
-- Bounded cost whatever the backlog: a pending job's id is not searched for in `pending` (no
-- LREM). It stays there as a ghost: its payload moves into its row (field `payload`), its `data`
-- field becomes "" (so an enqueue of the same id is still refused) and meta `ghosts` counts it;
-- claim drops the id when it pops it and puts the payload back into `data`.
--
-- Flows (docs/flows.md): a cancelled job whose row names a parent writes its hand-off `d:<id>` =
-- "d <queue> <parent id> <id> cancelled cancelled" to this queue's outbox, and a cancelled
-- `waiting` parent one entry `x:<child>` = "x <queue> <child>" per child whose outcome has not
-- arrived.
-- Dedup: a job cancelled here (reply 1) whose enqueue wrote `keyof:<id>` (an enqueue with a dedup
-- mode) frees its key: `key:<key>` is deleted when it still names this job, and the keyof too,
-- so the next enqueue of that key adds a new job. A flagged active job keeps its key.
-- Flags: allow-oom. It frees memory (a scheduled entry, its options, the cancelled set's trim) or
-- only flags a row; what it adds is bounded (a few fields, one outbox entry per child still out),
-- and refusing a cancel under OOM would leave unwanted work to run.
--
-- @key meta emq:{q}:meta queue meta hash (`ghosts`: ghost ids in pending; `keepc`: the cancelled
--   retention, recorded here for retry, reap and release)
-- @key pending emq:{q}:pending list of pending ids (not touched: kept in the layout)
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at (bounded retention)
-- @key data emq:{q}:data hash id -> payload ("" for a ghost)
-- @key opts emq:{q}:opts hash id -> the job's own options (until its first claim)
-- @key rows emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key outbox? emq:{q}:outbox with outdue; required when the row names a parent or the job is a
--   waiting flow parent
-- @key outdue? emq:{q}:outdue with outbox; required when the row names a parent or the job is a
--   waiting flow parent
-- @arg version version the protocol version
-- @arg id id:job the job
-- @arg keep 1..1000000 the cancelled retention: how many cancelled rows to keep
-- @returns 1 cancelled (also a `waiting` flow parent); 2 active, flagged; 0 already finished; -1 no
--   such job (integers).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[8] not the row of the id, a flow
--   job without the outbox keys), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes before the first
--   write.
-- @flags allow-oom
-- @uses args ids keys types meta events cancelled flow-child flow-parent dedup-free
need((#KEYS == 9 or #KEYS == 11) and #ARGV == 3, 'expected 9 (or 11) keys and 3 arguments')
local b, id = queue_base(KEYS[1]), ARGV[2]
need_keys(KEYS, b, { 'meta', 'pending', 'scheduled', 'cancelled', 'data', 'opts', 'job:', 'job:' .. id, 'events' })
local box, due = outbox_keys(KEYS, 10, b)
local m = queue_meta(KEYS[1])
need_id(id)
local keep = need_int(ARGV[3], 1, 1000000, 'the retention')

local row, scheduled, cancelled, data = KEYS[8], KEYS[3], KEYS[4], KEYS[5]
local cur = checked(redis.pcall('HMGET', row, 'status', 'parent'), row)
local status, parent = cur[1], cur[2]
need_types({ scheduled, 'zset', cancelled, 'zset', data, 'hash', KEYS[6], 'hash' })
if (parent or status == 'waiting') and status ~= 'active' then need_outbox(box, due, 'a flow job') end
if m.elog > 0 then need_type(KEYS[9], 'stream') end
local payload = redis.call('HGET', data, id)
local freed = dedup_key_of(b, id) -- its dedup key, freed when the job is cancelled here
if not status then
  -- No row yet: a job that was never claimed is scheduled or pending.
  if redis.call('ZSCORE', scheduled, id) then
    status = 'scheduled'
  elseif payload and payload ~= '' then -- "" is a ghost whose row left the retention
    status = 'pending'
  else
    return -1
  end
end
local now = now_ms()
local function record_keep()
  if m.keepc ~= ARGV[3] then redis.call('HSET', KEYS[1], 'keepc', keep) end
end
if status == 'active' then
  record_keep()
  redis.call('HSET', row, 'cancel', '1')
  emit(KEYS[9], m.elog, 'cancel-requested', { id })
  return 2
end
if status == 'pending' then
  -- The id stays in `pending` as a ghost (see the header): O(1) instead of an LREM.
  if payload and payload ~= '' then
    redis.call('HSET', row, 'payload', payload)
    redis.call('HSET', data, id, '')
    redis.call('HINCRBY', KEYS[1], 'ghosts', 1)
  end
elseif status == 'scheduled' then
  redis.call('ZREM', scheduled, id)
elseif status ~= 'waiting' then
  return 0
end
-- Flow bookkeeping: the parent hears of the cancel; a waiting parent's children still out are
-- cancelled in turn (each relayed like any outbox entry).
local boxed = 0
if status == 'waiting' then
  redis.call('HINCRBY', KEYS[1], 'waits', -1) -- meta `waits` (flow-add.lua)
  each_child_out(row, function(cid, queue)
    hand_off(box, due, 'x:' .. cid, 'x ' .. queue .. ' ' .. cid, now)
    boxed = boxed + 1
  end)
end
if parent then
  tell_parent(box, due, parent, id, 'cancelled', 'cancelled')
  boxed = boxed + 1
end
if boxed > 0 then redis.call('SPUBLISH', box, boxed) end
record_keep()
end_cancelled(row, cancelled, id, now)
redis.call('HDEL', KEYS[6], id)
dedup_free(freed)
trim_cancelled(cancelled, data, KEYS[7], keep, m.refs == '1')
emit(KEYS[9], m.elog, 'cancelled', { id })
return 1
