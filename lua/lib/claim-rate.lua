-- @requires fail types
-- Claim's queue rate limit (meta `rate` = "<max> <ms>", written by policy.lua: at most max jobs
-- per ms, all consumers together): a fixed window on the server clock,
-- counted in `emq:{q}:rate` (a string with a PX of the window). A claim takes at most what the
-- window has left; a limited claim's wait reply is the ms until the window ends.
-- claim_rate reads the window: { max, ms, key, used, left (its PTTL; 0 when no window is open) }.
local function claim_rate(max, ms, b)
  local rt = { key = b .. 'rate', used = 0, left = 0, max = max, ms = ms }
  rt.used = tonumber(checked(redis.pcall('GET', rt.key), rt.key)) or 0
  if rt.used > 0 then rt.left = redis.call('PTTL', rt.key) end
  if rt.left < 0 then rt.used, rt.left = 0, 0 end -- no PX: a new window
  return rt
end
-- Counts the jobs claimed in the window (opening it with its PX when none was open).
local function claim_rate_count(rt, k)
  if rt.used == 0 then redis.call('SET', rt.key, k, 'PX', rt.ms) else redis.call('INCRBY', rt.key, k) end
end
