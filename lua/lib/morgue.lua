-- The morgue (docs/protocol.md §5): `dead`, id -> buried at, capped by the caller's morgue cap.
-- Buries a job at now: its row ends `dead` with the error text, its id joins the morgue.
local function bury(row, dead, id, err, now)
  redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now)
  redis.call('ZADD', dead, now, id)
end
-- Trims the morgue to `cap` (at most 1000 rows per call: bounded work): the oldest rows and
-- their payloads go.
local function trim_morgue(dead, data, prefix, cap)
  local excess = math.min(redis.call('ZCARD', dead) - cap, 1000)
  if excess <= 0 then return end
  local old = redis.call('ZPOPMIN', dead, excess)
  for i = 1, #old, 2 do
    redis.call('DEL', prefix .. old[i])
    redis.call('HDEL', data, old[i])
  end
end
