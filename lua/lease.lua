#!lua flags=allow-oom
-- lease.lua: EchoMQ protocol v2. Built from lua/src/lease.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- A fenced lease on a name (docs/coordination.md): one holder at a time on the server clock, and a
-- fencing token per acquisition that is greater than every token issued for the name before, so a
-- resource that refuses a lower token than the highest it accepted never takes a write from a
-- holder that was superseded (a paused holder does not know it lost; its token tells).
-- The lease is one hash WITHOUT a TTL: its `fence` (the highest token issued) must outlive every
-- holder, and no eviction policy drops a key without a TTL (volatile-*); a lease is over when
-- `exp` has passed on the server clock, not when a key goes. A new token is at least
-- now_ms × 1000, so tokens keep increasing even when a restart without persistence loses the hash
-- (while the server clock moves forward; 1000 acquisitions per ms before the counter part leads).
-- Flag allow-oom: a call writes at most four fields of one hash per name, so it cannot grow memory
-- without bound; refusing a renewal under OOM would drop every holder exactly when memory is full.
--
-- @key lease emq:{co:<name>}:lease hash: owner, token (of the current or last holder), exp (server ms; 0 = released), fence (the highest token issued, never lowered)
-- @arg version version the protocol version
-- @arg op acquire|renew|release|read what to do
-- @arg owner bytes:1..64 the caller's identity: printable ASCII without spaces
-- @arg token token "" for acquire and read; the token held, for renew and release
-- @arg ttl 0..3600000 the lease in ms: 100..3600000 for acquire and renew; ignored by release and
--   read (pass "0")
-- @returns an array {status, owner, token, exp}: status (integer) 1 done, 0 refused; owner (bulk),
--   token (bulk, decimal; "" when none) and exp (integer server ms, 0 = released) are the lease's
--   after a success, the current holder's after a refusal. acquire: taken (a new token) or renewed
--   (re-entrant: this owner holds it unexpired; same token); 0 while another owner holds it
--   unexpired. renew: 1 iff this owner holds this token (the newest), even past its expiry (no
--   newer token exists); exp = now + ttl. release: 1 iff this owner holds this token; owner "" and
--   exp 0, so the next acquire succeeds at once. read writes nothing: status 1 iff held (owner not
--   "" and exp in the future).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not
--   emq:{co:<name>}:lease, an unknown operation, a bad owner, a token that is not "" for acquire
--   and read or not decimal digits for renew and release, a ttl out of range), EMQ_WRONGTYPE (the
--   key is not a hash, or a hash whose exp or fence is not a decimal integer). Every check comes
--   before the first write.
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
-- A fencing token: decimal digits, at most 20.
local function need_token(s)
  if type(s) ~= 'string' or #s > 20 or not string.match(s, '^%d+$') then fail('BAD_ARG', 'bad token') end
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
need_co_key(key, 'lease')
local op = need_word(ARGV[2], { acquire = true, renew = true, release = true, read = true }, 'operation')
local owner = need_holder(ARGV[3], 'owner')
local token = ARGV[4]
local writes = op == 'renew' or op == 'acquire'
if op == 'renew' or op == 'release' then need_token(token) else need(token == '', 'the token of an ' .. op .. ' must be ""') end
local ttl = need_int(ARGV[5], writes and 100 or 0, 3600000, 'ttl')
local h = checked(redis.pcall('HMGET', key, 'owner', 'token', 'exp', 'fence'), key)
-- HMGET answers false for an absent field.
local held_by, held_token, fence = h[1] or '', h[2] or '', h[4] or nil
if not string.match(h[3] or '0', '^%d+$') or (fence and not string.match(fence, '^%d+$')) then
  fail('WRONGTYPE', key .. ' is not a lease (exp and fence must be decimal integers)')
end
local exp = tonumber(h[3] or '0')

local now = now_ms()
local live = held_by ~= '' and exp > now
local current = { 0, held_by, held_token, exp }
if op == 'read' then
  current[1] = live and 1 or 0
  return current
end
if op == 'acquire' then
  if live and held_by ~= owner then return current end
  local until_ms = decimal(now + ttl)
  if live then -- re-entrant: this owner holds it; same token, later expiry
    redis.call('HSET', key, 'exp', until_ms)
    return { 1, owner, held_token, now + ttl }
  end
  local t = decimal(math.max((tonumber(fence) or 0) + 1, now * 1000))
  redis.call('HSET', key, 'owner', owner, 'token', t, 'exp', until_ms, 'fence', t)
  return { 1, owner, t, now + ttl }
end
-- renew and release: only the newest token's owner.
if fence ~= token or held_by ~= owner then return current end
if op == 'renew' then
  redis.call('HSET', key, 'exp', decimal(now + ttl))
  return { 1, owner, token, now + ttl }
end
redis.call('HSET', key, 'owner', '', 'exp', '0')
return { 1, owner, token, 0 }
end
return run(main)
