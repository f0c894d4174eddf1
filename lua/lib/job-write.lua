-- @requires types events
-- Writing new jobs (docs/protocol.md §3): enqueue.lua does it, and tick.lua writes its job exactly
-- the same way, with the same keys K = enqueue's KEYS[1..7] (meta, pending, scheduled, wake, data,
-- opts, events). A new job is its payload in `data`, its own options in `opts` (only when it has
-- any), its id in `pending` (ready now) or in `scheduled` at its run-at; one wake marker when
-- `wake` was empty, and the `enqueued` / `scheduled` lifecycle events. The row is made later, by
-- the job's first claim.
--
-- The checks before the first write, of the keys written after it: `wake` (answers its length;
-- 1, meaning no marker, when not read), `opts` when options are written, `scheduled` when it is
-- written after a push onto `pending`, and the events stream when the queue logs events.
local function check_new_jobs(K, elog, wake, opts, sched)
  local wakeLen = 1
  if wake then wakeLen = checked(redis.pcall('LLEN', K[4]), K[4]) end
  if opts then checked(redis.pcall('HLEN', K[6]), K[6]) end
  if sched then checked(redis.pcall('ZCARD', K[3]), K[3]) end
  if elog > 0 then need_type(K[7], 'stream') end
  return wakeLen
end
-- The first write is the type check of its own key (a write refused with WRONGTYPE changes
-- nothing): the ready ids onto `pending` (answers its new length, or nil when none), then the
-- run-at / id pairs into `scheduled`.
local function push_new_jobs(K, ready, zargs)
  local len = nil
  if #ready > 0 then len = checked(redis.pcall('LPUSH', K[2], unpack(ready)), K[2]) end
  if #zargs > 0 then checked(redis.pcall('ZADD', K[3], unpack(zargs)), K[3]) end
  return len
end
-- Payloads (id, payload, …) and own options (id, "<max>|<backoff>[|…]", …).
local function store_new_jobs(K, data, opts)
  redis.call('HSET', K[5], unpack(data))
  if #opts > 0 then redis.call('HSET', K[6], unpack(opts)) end
end
-- After the writes: the wake marker and the lifecycle events of the ids added.
local function announce_new_jobs(K, elog, wakeLen, queued, scheduled)
  if wakeLen == 0 then redis.call('LPUSH', K[4], '1') end
  emit(K[7], elog, 'enqueued', queued)
  emit(K[7], elog, 'scheduled', scheduled)
end
