-- stats.lua: EchoMQ protocol v2. Built from lua/src/stats.lua and lua/lib/ by `npm run lua:build`; do not edit.
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
-- The protocol version this build speaks: every script is called with it as ARGV[1] and refuses
-- any other first (run.lua), before it looks at a count, a key or an argument.
local PROTOCOL = '2'
-- Refusals. A script refuses by raising `EMQ_<CODE> <message>` (error level 0: no position in
-- the text); run() answers it as the error reply. A script that must write before its last check
-- (claim's pop-as-read) sets `on_refusal`, which run() calls before it answers the refusal.
local refusal_hook = nil
local function fail(code, msg) error('EMQ_' .. code .. ' ' .. msg, 0) end
-- Refuses with EMQ_BAD_ARG unless ok (a count, a shape, a mode that does not hold).
local function need(ok, msg) if not ok then fail('BAD_ARG', msg) end end
-- A decimal integer in [lo, hi], or nil: an optional `-`, at most 16 digits; refuses NaN, inf,
-- fractions, exponents, `+`, hex and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- The argument reader: each takes the argument, its range and its name, and answers the value or
-- refuses with EMQ_BAD_ARG naming the argument and what it must be.
local function need_int(s, lo, hi, what)
  local v = int(s, lo, hi)
  if not v then fail('BAD_ARG', what .. ' must be a decimal integer in ' .. lo .. '..' .. hi) end
  return v
end
-- Time is the server's: the epoch ms of this call, read once (Valkey gives a script call one
-- time, so a second TIME would answer the same; parts of a composed script share the read).
local clock_memo = nil
local function now_ms()
  if not clock_memo then
    local t = redis.call('TIME')
    clock_memo = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_memo
end
-- The key grammar (docs/protocol.md §2): every key a script is given must be the one the grammar
-- spells. A queue's keys share the base `emq:{<q>}:` (q a name: 1..100 of `A-Za-z0-9_.-`), read
-- from its meta key, KEYS[1]; keys a script reaches without declaring them are spelt from it too.
local function queue_base(meta)
  if type(meta) ~= 'string' or #meta > 110 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<queue>}:meta of a queue')
  end
  return string.sub(meta, 1, -5)
end
-- The runner every built script ends with (`return run(main)`): the version is checked before
-- anything else, so a caller of another version always hears EMQ_VERSION naming both versions;
-- then the script's body runs, and a refusal it raised (or a command's error) is its reply.
local function version_error(v)
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. PROTOCOL .. ', caller speaks ' .. string.sub(tostring(v), 1, 32))
end
-- A call's outcome as an error reply: the hook (if any) first, so a refusal still writes nothing.
local function refusal(r)
  if refusal_hook then local undo = refusal_hook; refusal_hook = nil; undo() end
  return redis.error_reply(type(r) == 'table' and tostring(r.err) or tostring(r))
end
local function run(main)
  if ARGV[1] ~= PROTOCOL then return version_error(ARGV[1]) end
  local ok, r = pcall(main, KEYS, ARGV)
  if ok then return r end
  return refusal(r)
end
-- Key types: a key that holds another type than the protocol gives it is EMQ_WRONGTYPE, found
-- before the first write (Valkey does not roll a script back).
local function need_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then fail('WRONGTYPE', key .. ' is a ' .. t .. ', not a ' .. want) end
end
-- Several at once: a flat list key, type, key, type, …
local function need_types(list)
  for i = 1, #list, 2 do need_type(list[i], list[i + 1]) end
end
local function main(KEYS, ARGV)
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
end
return run(main)
