-- @requires clock
-- Lifecycle events (docs/protocol.md §5a): one sharded pub/sub message per call and kind on the
-- queue's events channel, and, when its `elog` is above 0, one entry in the bounded events stream.
local function emit(key, elog, kind, ids)
  if #ids == 0 then return end
  local now = now_ms()
  -- Ids and kinds are validated base62 / fixed words: plain concatenation is valid JSON.
  redis.call('SPUBLISH', key, '{"e":"' .. kind .. '","ids":["' .. table.concat(ids, '","') .. '"],"at":' .. now .. '}')
  if elog > 0 then
    redis.call('XADD', key, 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', table.concat(ids, ' '), 'at', now)
  end
end
