-- @requires fail types clock claim-slide
-- Claim's queue rate limit (meta `rate` = "<max> <ms>" or "<max> <ms> sliding", written by
-- policy.lua: at most max jobs per ms, all consumers together), on the server clock. Fixed (the
-- default): a window counted in `emq:{q}:rate` (a string with a PX of the window), opened by the
-- claim that takes its first job; up to 2 x max may start across a window's end. Sliding: at most
-- max in any ms-long span, logged in `emq:{q}:rlog` (lua/lib/claim-slide.lua). A claim takes at
-- most what the window has left; a limited claim's wait reply is the ms until it has room again.
-- claim_rate reads the window: { max, ms, key, used, left (fixed: its PTTL, 0 when no window is
-- open), sw (sliding: the log read) }.
local function claim_rate(max, ms, b, sliding)
  if sliding then
    local sw = slide_read(b .. 'rlog', ms, now_ms())
    return { max = max, ms = ms, used = sw.used, left = sw.first and slide_rest(sw) or 0, sw = sw }
  end
  local rt = { key = b .. 'rate', used = 0, left = 0, max = max, ms = ms }
  rt.used = tonumber(checked(redis.pcall('GET', rt.key), rt.key)) or 0
  if rt.used > 0 then rt.left = redis.call('PTTL', rt.key) end
  if rt.left < 0 then rt.used, rt.left = 0, 0 end -- no PX: a new window
  return rt
end
-- Counts the jobs claimed in the window (fixed: opening it with its PX when none was open).
local function claim_rate_count(rt, k)
  if rt.sw then slide_count(rt.sw, k)
  elseif rt.used == 0 then redis.call('SET', rt.key, k, 'PX', rt.ms) else redis.call('INCRBY', rt.key, k) end
end
