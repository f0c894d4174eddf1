#!lua flags=allow-oom
-- cache-invalidate.lua: EchoMQ protocol v2. Built from lua/src/cache-invalidate.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Invalidates one L2 cache entry: replaces it with a tombstone {v = version, x = 1} kept for the
-- tombstone window, so a loader that began before the invalidation (its version is older) cannot
-- write its old value back (cache-set.lua refuses it). An entry already holding a NEWER version
-- than the invalidation is kept: it was written by a load or set that began after the
-- invalidation was minted.
-- Flag allow-oom: it frees memory (a tombstone replaces the entry and expires in the window) and
-- keeps the cache coherent; refused under OOM, a stale value would stay served.
--
-- @key entry emq:{c:<ns>:<key>}:entry the entry hash (see cache-set.lua)
-- @arg version version the protocol version
-- @arg ver id:ver the invalidation's version, minted now
-- @arg tombstone-ms 1..86400000 tombstone window in ms
-- @returns 1 tombstoned, 0 kept (the entry holds the same or a newer version).
-- @errors EMQ_VERSION (caller's version, or a stored `v` that is not a version id), EMQ_BAD_ARG (a
--   wrong key or argument count, a key that is not an entry key, a tombstone window that is not
--   a decimal integer in range), EMQ_BAD_ID, EMQ_WRONGTYPE (the entry is not a hash). Nothing is
--   written unless every input is valid.
-- @flags allow-oom
-- @uses args ids cache-keys cache-versions
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
-- The 14-byte gate (docs/protocol.md §1): a 3-letter namespace, 11 base62 digits, the body at
-- most 2^64-1 (`LygHa16AHYF`). Compared byte by byte: Lua's `>` on strings follows the server's
-- collation locale, not byte order.
local ID_MAX = 'LygHa16AHYF'
local ID_PATTERN = { job = '^job[0-9A-Za-z]+$', evt = '^evt[0-9A-Za-z]+$', ver = '^ver[0-9A-Za-z]+$' }
local function bad_id(id, ns)
  if type(id) ~= 'string' or #id ~= 14 or not string.match(id, ID_PATTERN[ns or 'job']) then return true end
  local first = string.byte(id, 4)
  if first ~= 76 then return first > 76 end -- 'L', the first digit of the bound: most ids differ there
  for i = 2, 11 do
    local x, y = string.byte(id, i + 3), string.byte(ID_MAX, i)
    if x ~= y then return x > y end
  end
  return false
end
-- An id of namespace ns (default `job`), or EMQ_BAD_ID.
local function need_id(id, ns)
  if bad_id(id, ns) then fail('BAD_ID', 'malformed ' .. (ns or 'job') .. ' id') end
  return id
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
-- Cache versions (docs/cache.md, the version rule): 14-byte `ver` ids, newer mint wins.
-- True when version a sorts strictly before b (both 14 bytes), compared byte by byte: Lua's `<`
-- on strings follows the server's collation locale, not byte order.
local function older(a, b)
  for i = 1, 14 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
-- The version an entry hash holds (HGET `v`, WRONGTYPE checked; nil when absent), or
-- EMQ_VERSION when its `v` is not a version id (not this protocol's cache data).
local function entry_version(key)
  local v = checked(redis.pcall('HGET', key, 'v'), key)
  if v and bad_id(v, 'ver') then fail('VERSION', key .. ' is not protocol ' .. PROTOCOL .. ' cache data') end
  return v or nil
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
local function main(KEYS, ARGV)
need(#KEYS == 1 and #ARGV == 3, 'expected 1 key and 3 arguments')
need_entry_key(KEYS[1], 'entry', 1)
local ver = need_id(ARGV[2], 'ver')
local tombMs = need_int(ARGV[3], 1, 86400000, 'tombstone ms')
local stored = entry_version(KEYS[1])

if stored and not older(stored, ver) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ver, 'x', '1')
redis.call('PEXPIRE', KEYS[1], tombMs)
return 1
end
return run(main)
