-- @requires row-trim
-- The morgue (docs/protocol.md §5): `dead`, id -> buried at, capped by the caller's morgue cap.
-- Buries a job at now: its row ends `dead` with the error text (and, given, its attempt history
-- `hist`, in the same HSET), its id joins the morgue.
local function bury(row, dead, id, err, now, hist)
  if hist then redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now, 'hist', hist)
  else redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now) end
  redis.call('ZADD', dead, now, id)
end
-- Trims the morgue to `cap`: the oldest rows and their payloads go (bounded work per call), and
-- their business ids (`refs`, see row-trim.lua).
local function trim_morgue(dead, data, prefix, cap, refs)
  trim_rows(dead, data, prefix, cap, false, refs)
end
