#!lua flags=allow-oom
-- semaphore.lua: EchoMQ protocol v2. Built from lua/src/semaphore.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- A counting semaphore on a name (docs/coordination.md): at most `limit` holders at once, each
-- permit a lease on the server clock (a zset member whose score is its expiry), so a crashed
-- holder's permit is counted out when its expiry passes. Expired permits are removed by every
-- write (acquire, renew, release). The limit is the caller's: callers of one name must agree.
-- Flag allow-oom: an acquire adds at most one member while fewer than `limit` are live, and every
-- write first removes the expired ones, so the zset stays bounded by the largest limit used;
-- refusing renewals and releases under OOM would drop every holder when memory is full.
--
-- @key sem emq:{co:<name>}:sem zset: member = holder id, score = its permit's expiry (server ms)
-- @arg version version the protocol version
-- @arg op acquire|renew|release|read what to do
-- @arg holder bytes:1..64 the permit's holder id: printable ASCII without spaces
-- @arg limit 0..100000 the most holders at once, 1..100000 for acquire; ignored otherwise (pass "0")
-- @arg ttl 0..3600000 the permit in ms: 100..3600000 for acquire and renew; ignored otherwise (pass "0")
-- @returns an array of 3 integers {status, count, exp}. acquire: {1, live count, expiry} when the
--   holder holds a permit (a new one while fewer than limit are live, or its own renewed), else
--   {0, live count, the earliest expiry of a live permit}. renew: {1, count, expiry} iff the holder's
--   permit is live, else {0, count, 0} (an expired permit may already be counted out: stop).
--   release: {1, count, 0} when a permit was removed, {0, count, 0} when there was none. read
--   (no write): {live count, 0, 0}.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not
--   emq:{co:<name>}:sem, an unknown operation, a bad holder, a limit or ttl out of range),
--   EMQ_WRONGTYPE (the key is not a zset). Every check comes before the first write.
-- @flags allow-oom
-- @uses args types clock coord-keys
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
-- One of a set of words, given as a table word -> true.
local function need_word(s, words, what)
  if not words[s] then
    local list = {}
    for w in pairs(words) do list[#list + 1] = w end
    table.sort(list)
    fail('BAD_ARG', what .. ' must be one of ' .. table.concat(list, ', '))
  end
  return s
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
-- The coordination grammar (docs/protocol.md, "Coordination"): a lease or a semaphore is named by
-- a name of the key grammar (1..100 bytes of `A-Za-z0-9_.-`) under its own hash tag `co:<name>`,
-- `emq:{co:<name>}:lease` (hash) and `emq:{co:<name>}:sem` (zset). KEYS[1] must be the key of
-- `kind` (`lease` or `sem`), or EMQ_BAD_ARG; answers the name.
local function need_co_key(k, kind)
  local name = string.match(type(k) == 'string' and k or '', '^emq:{co:([A-Za-z0-9_.%-]+)}:' .. kind .. '$')
  if not name or #name > 100 then fail('BAD_ARG', 'KEYS[1] must be a key emq:{co:<name>}:' .. kind) end
  return name
end
-- A holder's identity (a lease's owner, a permit's holder): 1..64 bytes of printable ASCII
-- without spaces, or EMQ_BAD_ARG naming it.
local function need_holder(s, what)
  if type(s) ~= 'string' or #s < 1 or #s > 64 or not string.match(s, '^[!-~]+$') then
    fail('BAD_ARG', what .. ' must be 1..64 bytes of printable ASCII without spaces')
  end
  return s
end
-- A whole number of ms as its decimal text (never the `%.14g` form Lua's tostring gives a large one).
local function decimal(n)
  return string.format('%.0f', n)
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
-- The reply of a command run through redis.pcall: WRONGTYPE becomes EMQ_WRONGTYPE naming the key,
-- any other error reply is raised as it is (OOM, NOPERM keep their codes); a reply passes.
local function checked(r, key)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) == 'WRONGTYPE' then fail('WRONGTYPE', key .. ' holds a value of another type than the protocol gives it') end
    error(r.err, 0)
  end
  return r
end
local function main(KEYS, ARGV)
need(#KEYS == 1 and #ARGV == 5, 'expected 1 key and 5 arguments')
local key = KEYS[1]
need_co_key(key, 'sem')
local op = need_word(ARGV[2], { acquire = true, renew = true, release = true, read = true }, 'operation')
local holder = need_holder(ARGV[3], 'holder')
local limit = need_int(ARGV[4], op == 'acquire' and 1 or 0, 100000, 'limit')
local ttl = need_int(ARGV[5], (op == 'acquire' or op == 'renew') and 100 or 0, 3600000, 'ttl')
local total = checked(redis.pcall('ZCARD', key), key)

local now = now_ms()
if op == 'read' then return { redis.call('ZCOUNT', key, '(' .. decimal(now), '+inf'), 0, 0 } end
local count = total - redis.call('ZREMRANGEBYSCORE', key, '-inf', decimal(now))
if op == 'release' then
  local gone = redis.call('ZREM', key, holder)
  return { gone, count - gone, 0 }
end
local mine = redis.call('ZSCORE', key, holder)
if mine or (op == 'acquire' and count < limit) then
  redis.call('ZADD', key, decimal(now + ttl), holder)
  return { 1, mine and count or count + 1, now + ttl }
end
if op == 'renew' then return { 0, count, 0 } end
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return { 0, count, tonumber(first[2]) }
end
return run(main)
