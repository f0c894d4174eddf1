-- Hands active jobs back unstarted or unfinished, each fenced by its token: the job returns to the
-- front of `pending` at once (instead of waiting for its lease to expire) and the attempt its
-- claim counted is given back. Used for prefetched jobs a consumer never started and for handlers
-- abandoned at shutdown. A job flagged by cancel while active (`cancel` = 1) ends `cancelled`
-- instead (attempt given back too; kept in the cancelled set, trimmed to meta `keepc`, default
-- 1000).
--
-- A row with `prio` (a job of priority level p, docs/protocol.md §5) goes back to `<pending>:<p>`
-- (derived from the pending key, same slot) and p to `emq:{q}:levels`; in lanes mode a row with
-- `group` g goes back to `emq:{q}:group:<g>` (a lane that was empty joins the ring `groups`).
-- A job that ends cancelled and names a parent writes its hand-off `d:<id>` = "d <queue> <parent
-- id> <id> cancelled cancelled" to this queue's outbox (docs/flows.md).
-- Flags: allow-oom. It frees leases (active entries) and trims the cancelled set; it adds only a
-- bounded outbox entry per flagged flow child: refusing it under OOM would strand jobs in active
-- until their leases expire.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key pending emq:{q}:pending list of pending ids
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key rows emq:{q}:job: prefix of job rows
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key cancelled emq:{q}:cancelled zset id -> cancelled at (for jobs flagged by cancel)
-- @key data emq:{q}:data hash id -> payload (for jobs trimmed out of the cancelled set)
-- @key row* emq:{q}:job:<id> the row of job i, KEYS[8+i] for i = 1..n
-- @key outbox? emq:{q}:outbox KEYS[9+n], with outdue; required when a flagged row names a parent
-- @key outdue? emq:{q}:outdue KEYS[10+n], with outbox; required when a flagged row names a parent
-- @arg version version the protocol version
-- @arg n 1..1000 the number of jobs
-- @arg id* id:job per job i, ARGV[3+2(i-1)]: its id
-- @arg token* token per job i, ARGV[4+2(i-1)]: its fencing token (decimal digits)
-- @returns an array of n integers: 1 = released, 2 = cancelled (it was flagged), 0 = refused
--   (stale token, not active, or the earlier copy of an id given twice).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], a key that is not the row of its id, a
--   flagged row naming a parent without the outbox keys), EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE,
--   EMQ_WRONGTYPE. Every check comes before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta events cancelled lanes-back flow-child
need(#KEYS >= 9 and #ARGV >= 4, 'expected at least 9 keys and 4 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'active', 'pending', 'wake', 'job:', 'events', 'cancelled', 'data' })
local m = queue_meta(KEYS[1])
local n = need_int(ARGV[2], 1, 1000000000, 'the job count')
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 jobs per call') end
need((#KEYS == 8 + n or #KEYS == 10 + n) and #ARGV == 2 + 2 * n, 'expected ' .. n .. ' rows and ' .. (2 * n) .. ' job arguments')
local active, pending, prefix, events, cancelled = KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[7]
for i = 1, n do
  local id = ARGV[3 + 2 * (i - 1)]
  if bad_id(id) then fail('BAD_ID', 'job ' .. i .. ' has a malformed id') end
  need_row(KEYS[8 + i], prefix, id)
  need_token(ARGV[4 + 2 * (i - 1)])
end
-- Every row is read before the first write, so a row of the wrong type refuses the whole call.
local rows, anyParent = {}, false
for i = 1, n do
  local cur = checked(redis.pcall('HMGET', KEYS[8 + i], 'status', 'token', 'cancel', 'parent', 'prio', 'group'), KEYS[8 + i])
  rows[i] = cur
  if m.lanes == '1' and cur[1] == 'active' then need_lane_types(b, pending, cur[5], cur[6]) end
  if cur[3] == '1' and cur[4] then anyParent = true end
end
local box, due = outbox_keys(KEYS, 9 + n, b)
if anyParent then need_outbox(box, due, 'a flagged row names a parent') end
need_types({ active, 'zset', pending, 'list', KEYS[4], 'list', cancelled, 'zset', KEYS[8], 'hash' })
if m.elog > 0 then need_type(events, 'stream') end

local now = now_ms()
local out, ids, cancelledIds, seen, handed = {}, {}, {}, {}, 0
-- Walk backwards so the first job given ends up first in line. An id given twice is handed
-- back once (the rows were read before the walk): its earlier copy answers 0.
for i = n, 1, -1 do
  local id, token = ARGV[3 + 2 * (i - 1)], ARGV[4 + 2 * (i - 1)]
  local row, cur = KEYS[8 + i], rows[i]
  if cur[1] == 'active' and cur[2] == token and not seen[id] then
    seen[id] = true
    redis.call('ZREM', active, id)
    redis.call('HINCRBY', row, 'attempts', -1)
    if cur[3] == '1' then
      end_cancelled(row, cancelled, id, now)
      cancelledIds[#cancelledIds + 1] = id
      out[i] = 2
      if cur[4] then -- a flow child hands its cancel to the parent's queue
        tell_parent(box, due, cur[4], id, 'cancelled', 'cancelled')
        handed = handed + 1
      end
    else
      redis.call('HSET', row, 'status', 'pending')
      back_in_line(m.lanes, b, pending, id, cur[5], cur[6])
      ids[#ids + 1] = id
      out[i] = 1
    end
  else
    out[i] = 0
  end
end
if #ids > 0 and redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
if #cancelledIds > 0 then trim_cancelled(cancelled, KEYS[8], prefix, cancelled_keep(m.keepc), m.refs == '1') end
if handed > 0 then redis.call('SPUBLISH', box, handed) end
emit(events, m.elog, 'released', ids)
emit(events, m.elog, 'cancelled', cancelledIds)
return out
