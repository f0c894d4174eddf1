-- @requires fail types
-- Claim's sliding-window rate limit (docs/protocol.md §5, "Rate limits"): at most max jobs claimed
-- in any window of ms on the server clock, all consumers together. The log of a limit is a zset
-- (`rlog` for the queue, `grlog:<g>` for a lane): one entry per claim that took jobs, scored
-- with its server ms, member `<cum>:<k>` (k: the jobs it took; cum: the jobs logged up to and
-- including it, 16 digits with leading zeros, so members are unique and entries of one ms sort
-- in claim order, as a zset orders equal scores by member; the jobs in the window are the
-- newest entry's cum less the oldest in-window entry's cum, plus that entry's k). A claim counts the jobs of the
-- window (now - ms, now]: two reads whatever the log holds (the oldest entry in the window,
-- the newest entry), and its write drops the entries that left the window. The key's PX is
-- the window, so an idle limit leaves nothing behind.
-- slide_read answers { key, ms, now, used, cum (the newest entry's), first (the oldest
-- in-window entry's ms, nil when none) }; a member that is not `<cum>:<k>` is EMQ_WRONGTYPE.
local function slide_read(key, ms, now)
  local sw = { key = key, ms = ms, now = now, used = 0, cum = 0, first = nil }
  local f = checked(redis.pcall('ZRANGE', key, '(' .. (now - ms), '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES'), key)
  if f[1] then
    local c1, k1 = string.match(f[1], '^(%d+):(%d+)$')
    local last = redis.call('ZRANGE', key, -1, -1)[1]
    local cl = last and string.match(last, '^(%d+):%d+$')
    if not c1 or not cl then fail('WRONGTYPE', key .. ' holds a member that is not "<cum>:<k>"') end
    sw.cum, sw.first = tonumber(cl), tonumber(f[2])
    sw.used = sw.cum - tonumber(c1) + tonumber(k1)
  end
  return sw
end
-- The ms until the window has room again once it is used up: the oldest in-window entry leaves
-- it then (a log that had none: the entry this claim adds, a whole window away).
local function slide_rest(sw)
  return sw.first and math.max(1, sw.first + sw.ms - sw.now) or sw.ms
end
-- Logs a claim of k > 0 jobs: its entry, the expired entries dropped, the key's PX renewed.
local function slide_count(sw, k)
  redis.call('ZADD', sw.key, sw.now, string.format('%016d:%d', sw.cum + k, k))
  redis.call('ZREMRANGEBYSCORE', sw.key, '-inf', sw.now - sw.ms)
  redis.call('PEXPIRE', sw.key, sw.ms)
end
