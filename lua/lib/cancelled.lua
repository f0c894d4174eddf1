-- @requires int row-trim
-- The cancelled set (docs/protocol.md §5): a job that ends `cancelled` keeps its row and its id in
-- `cancelled` (id -> cancelled at), trimmed to the retention cancel.lua records in meta `keepc`.
-- The retention of meta `keepc`, 1000 when unset or malformed.
local function cancelled_keep(keepc)
  return int(keepc, 1, 1000000) or 1000
end
-- Ends a job `cancelled` at now: its row (with the error text, when one is given, and then its
-- attempt history `hist`, when given, in the same HSET) and the set.
local function end_cancelled(row, set, id, now, err, hist)
  if err and hist then
    redis.call('HSET', row, 'status', 'cancelled', 'error', err, 'finished', now, 'hist', hist)
  elseif err then
    redis.call('HSET', row, 'status', 'cancelled', 'error', err, 'finished', now)
  else
    redis.call('HSET', row, 'status', 'cancelled', 'finished', now)
  end
  redis.call('ZADD', set, now, id)
end
-- Trims the cancelled set to `keep` (bounded work per call): the oldest rows and payloads go,
-- but a ghost's `data` marker stays, and business ids go (`refs`, row-trim.lua).
local function trim_cancelled(set, data, prefix, keep, refs)
  trim_rows(set, data, prefix, keep, true, refs)
end
