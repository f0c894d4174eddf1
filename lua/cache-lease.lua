-- cache-lease.lua: EchoMQ protocol v2. Built from lua/src/cache-lease.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- The cross-process fill lease of one cache key: among the nodes that miss the same cold key at
-- once, the one that takes the lease loads; the others poll the entry briefly (or serve stale)
-- instead of stampeding the origin. The lease expires by itself, so a crashed loader only delays
-- the others by the lease time.
-- No script flag: `take` writes a new key, so under OOM it is refused at its SET, as a legacy
-- script; `drop` (a DEL) still runs then.
--
-- @key lease emq:{c:<ns>:<key>}:lease string: the holder's token (same slot as the entry)
-- @arg version version the protocol version
-- @arg op take|drop "take" (set with PX when absent) or "drop" (delete only if held by this token)
-- @arg token bytes:1..64 the holder's token: characters [0-9A-Za-z_-]
-- @arg ms 1..600000 lease ms (ignored by "drop", still validated)
-- @returns 1 taken / dropped, 0 held by another token / not ours.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not a lease key,
--   a bad operation or token, lease ms not a decimal integer in range), EMQ_WRONGTYPE (the lease
--   is not a string). The lease is read before any write: a refusal writes nothing.
-- @uses args types cache-keys
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
-- The hash tag `c:<ns>:<key>` of an entry (kind `entry`) or lease (`lease`) key, or EMQ_BAD_ARG.
-- One match (the key's class already excludes the braces), on cache-get's hot path.
local ENTRY_KEY = { entry = '^emq:{c:[A-Za-z0-9_.%-]+:[!-z|~]+}:entry$', lease = '^emq:{c:[A-Za-z0-9_.%-]+:[!-z|~]+}:lease$' }
local function need_entry_key(k, kind, i)
  local tag = type(k) == 'string' and string.find(k, ENTRY_KEY[kind]) and string.sub(k, 6, -#kind - 3)
  if tag and #tag > 104 then -- shorter, neither the namespace (100) nor the key (512) can be too long
    local ns = #string.match(tag, '^c:([^:]*)')
    if ns > 100 or #tag - 3 - ns > 512 then tag = nil end
  end
  if not tag then fail('BAD_ARG', 'KEYS[' .. i .. '] must be a cache ' .. kind .. ' key emq:{c:<ns>:<key>}:' .. kind) end
  return tag
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
need(#KEYS == 1 and #ARGV == 4, 'expected 1 key and 4 arguments')
need_entry_key(KEYS[1], 'lease', 1)
local op = need_word(ARGV[2], { take = true, drop = true }, 'operation')
local token = ARGV[3]
need(#token >= 1 and #token <= 64 and string.match(token, '^[0-9A-Za-z_-]+$'), 'token must be 1..64 characters [0-9A-Za-z_-]')
local ms = need_int(ARGV[4], 1, 600000, 'lease ms')
local held = checked(redis.pcall('GET', KEYS[1]), KEYS[1])

if op == 'take' then
  if held then return 0 end
  redis.call('SET', KEYS[1], token, 'PX', ms)
  return 1
end
if held == token then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
end
return run(main)
