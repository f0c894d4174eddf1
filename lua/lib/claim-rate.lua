-- @requires fail int types
-- Claim's queue rate limit (ARGV[5] jobs per ARGV[6] ms): a fixed window on the server clock,
-- counted in `emq:{q}:rate` (a string with a PX of the window). A claim takes at most what the
-- window has left; a limited claim's wait reply is the ms until the window ends.
-- claim_rate reads the window: { max, ms, key, used, left (its PTTL; 0 when no window is open) }.
local function claim_rate(ARGV, b)
  local rt = { key = b .. 'rate', used = 0, left = 0 }
  rt.max, rt.ms = int(ARGV[5], 1, 1000000), int(ARGV[6], 1, 86400000)
  need(rt.max and rt.ms, 'rate limit must be 1..1000000 jobs per 1..86400000 ms')
  rt.used = tonumber(checked(redis.pcall('GET', rt.key), rt.key)) or 0
  if rt.used > 0 then rt.left = redis.call('PTTL', rt.key) end
  if rt.left < 0 then rt.used, rt.left = 0, 0 end -- no PX: a new window
  return rt
end
-- Counts the jobs claimed in the window (opening it with its PX when none was open).
local function claim_rate_count(rt, k)
  if rt.used == 0 then redis.call('SET', rt.key, k, 'PX', rt.ms) else redis.call('INCRBY', rt.key, k) end
end
