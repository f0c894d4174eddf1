-- A consumer's metrics flush (docs/protocol.md §5, "stats"): the counts and latency histograms a
-- process accumulated in memory for one queue and one minute, added to that minute's hash and to
-- its hour's rollup in one call. The keys are spelt from KEYS[1] (same slot), since their names
-- depend on the minute: `emq:{q}:stats:m:<minute>` (minute = floor(epoch s / 60)), kept 25 h
-- after its last write, and `emq:{q}:stats:h:<hour>` (hour = floor(minute / 60)), kept 15 days.
-- Every field is an integer added with HINCRBY; a field that holds no integer (planted by hand)
-- is overwritten with the increment, so a bad value never blocks later flushes.
-- No script flags: the hashes grow by a bounded field set and expire.
--
-- @key meta emq:{q}:meta queue meta hash (names the queue; not read)
-- @arg version version the protocol version
-- @arg second int an epoch second (client clock) inside the minute the counts belong to: at most 3 h before and 10 min after the server's clock
-- @arg pairs* text 1..45 field/increment pairs: fields `c` completed, `f` failed (retried), `d` buried, `r0`..`r18` run-time buckets, `rs` run-time sum (ms), `w0`..`w18` wait-time buckets, `ws` wait-time sum (ms), each at most once; increments 1..10^15
-- @returns {minute, hour}: the minute and hour numbers written (their keys are `stats:m:<minute>`, `stats:h:<hour>`).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not a meta key, a second outside the
--   window, an unknown or repeated field, an increment not an integer in range), EMQ_WRONGTYPE (a
--   stats key that is not a hash). Every check comes before the first write.
-- @uses args keys types clock
need(#KEYS == 1 and #ARGV >= 4 and #ARGV <= 92 and #ARGV % 2 == 0, 'expected 1 key and 2 + 2..90 arguments (field/increment pairs)')
local base = queue_base(KEYS[1])
local now = math.floor(now_ms() / 1000)
local second = need_int(ARGV[2], now - 10800, now + 600, 'the second (within 3 h before and 10 min after the server clock)')
local minute = math.floor(second / 60)
local hour = math.floor(minute / 60)
local known = { c = true, f = true, d = true, rs = true, ws = true }
for b = 0, 18 do known['r' .. b] = true; known['w' .. b] = true end
local seen = {}
for i = 3, #ARGV, 2 do
  local f = ARGV[i]
  if not known[f] then fail('BAD_ARG', 'unknown stats field ' .. string.sub(tostring(f), 1, 20)) end
  if seen[f] then fail('BAD_ARG', 'stats field ' .. f .. ' given twice') end
  seen[f] = true
  need_int(ARGV[i + 1], 1, 1000000000000000, 'the increment of ' .. f)
end
local mkey = base .. 'stats:m:' .. minute
local hkey = base .. 'stats:h:' .. hour
need_types({ mkey, 'hash', hkey, 'hash' })
for _, key in ipairs({ mkey, hkey }) do
  for i = 3, #ARGV, 2 do
    local r = redis.pcall('HINCRBY', key, ARGV[i], ARGV[i + 1])
    if type(r) == 'table' and r.err then redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
  end
end
redis.call('EXPIRE', mkey, 90000)
redis.call('EXPIRE', hkey, 1296000)
return { minute, hour }
