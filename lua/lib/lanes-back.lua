-- @requires types
-- Putting an active job back in line, first (the pop end), docs/protocol.md §5 (Priorities, Fair
-- lanes). Without lanes (meta `lanes` unset) it goes back to `pending`. In lanes mode a job of
-- group g goes to `group:<g>`, one of priority level p to `<pending>:<p>` (and p to `levels`),
-- another to `pending`; a lane list that was empty joins the ring `groups`.
-- The types of the lanes a row (`prio` p, `group` g) may go back to, checked before any write.
local function need_lane_types(base, pending, p, g)
  need_types({ pending .. ':' .. (p or 0), 'list', base .. 'levels', 'zset', base .. 'groups', 'list', base .. 'group:' .. (g or '-'), 'list' })
end
local function back_in_line(lanes, base, pending, id, p, g)
  if lanes ~= '1' then
    redis.call('RPUSH', pending, id)
  elseif g then
    if redis.call('RPUSH', base .. 'group:' .. g, id) == 1 then redis.call('LPUSH', base .. 'groups', g) end
  elseif p then
    redis.call('RPUSH', pending .. ':' .. p, id)
    redis.call('ZADD', base .. 'levels', p, p)
  elseif redis.call('RPUSH', pending, id) == 1 then
    redis.call('LPUSH', base .. 'groups', '')
  end
end
