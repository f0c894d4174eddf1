-- @requires int
-- The cancelled set (docs/protocol.md §5): a job that ends `cancelled` keeps its row and its id in
-- `cancelled` (id -> cancelled at), trimmed to the retention cancel.lua records in meta `keepc`.
-- The retention of meta `keepc`, 1000 when unset or malformed.
local function cancelled_keep(keepc)
  return int(keepc, 1, 1000000) or 1000
end
-- Ends a job `cancelled` at now: its row (with the error text, when one is given) and the set.
local function end_cancelled(row, set, id, now, err)
  if err then
    redis.call('HSET', row, 'status', 'cancelled', 'error', err, 'finished', now)
  else
    redis.call('HSET', row, 'status', 'cancelled', 'finished', now)
  end
  redis.call('ZADD', set, now, id)
end
-- Trims the cancelled set to `keep` (at most 1000 rows per call): the oldest rows and payloads
-- go. A ghost's `data` marker stays, so claim still recognises its id (and an enqueue of it is
-- still refused) until claim pops it.
local function trim_cancelled(set, data, prefix, keep)
  local excess = math.min(redis.call('ZCARD', set) - keep, 1000)
  if excess <= 0 then return end
  local old = redis.call('ZPOPMIN', set, excess)
  for i = 1, #old, 2 do
    redis.call('DEL', prefix .. old[i])
    if redis.call('HGET', data, old[i]) ~= '' then redis.call('HDEL', data, old[i]) end
  end
end
