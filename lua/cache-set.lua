-- cache-set.lua: EchoMQ protocol v2. Built from lua/src/cache-set.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Writes one L2 cache entry, fenced by its version: the write lands only when the entry holds no
-- version, or an OLDER one (live value or tombstone). A loader that began before an invalidation
-- carries an older version than the tombstone, so it can never write its old value back. Newer
-- mint wins; an equal version is not written twice. The tag index is not written here (another
-- slot): see cache-tag.lua.
-- No script flag: a write grows memory by a new entry, so under OOM it is refused at its first
-- write, as a legacy script (a cache whose writes fail still serves its loads).
--
-- @key entry emq:{c:<ns>:<key>}:entry the entry hash: v version id, d JSON value, t tags, g grace
--   ms, n = 1 a cached miss, x = 1 a tombstone
-- @arg version version the protocol version
-- @arg ver id:ver the writer's version, minted when its load began
-- @arg value json the value as JSON text ("" = a cached miss: the entry gets n = 1 and no d)
-- @arg ttl 1..315360000000 fresh time in ms, jitter already applied by the caller
-- @arg max-bytes 1..536870912 largest value in bytes
-- @arg tags text tags, space-separated ("" = none); each 1..512 printable ASCII without braces
-- @arg grace 0..315360000000 grace in ms: the entry lives ttl + grace, stale during the grace
-- @returns {1} written, or {0, storedVersion} when the entry holds the same or a newer version.
-- @errors EMQ_VERSION (caller's version, or a stored `v` that is not a version id), EMQ_BAD_ARG
--   (missing or malformed arguments: every number is a decimal integer in range; a key that is
--   not an entry key), EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE, EMQ_WRONGTYPE (the entry is not a
--   hash). Every input is checked, and the entry read, before the first write: a refusal writes
--   nothing.
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
need(#KEYS == 1 and #ARGV == 7, 'expected 1 key and 7 arguments')
need_entry_key(KEYS[1], 'entry', 1)
local LIMIT = 315360000000
local ver, value, tags = need_id(ARGV[2], 'ver'), ARGV[3], ARGV[6]
local ttl = need_int(ARGV[4], 1, LIMIT, 'ttl')
local maxBytes = need_int(ARGV[5], 1, 536870912, 'max bytes')
local grace = need_int(ARGV[7], 0, LIMIT, 'grace')
if #value > maxBytes then
  fail('PAYLOAD_TOO_LARGE', 'value is ' .. #value .. ' bytes, the limit is ' .. maxBytes)
end
if tags ~= '' then
  for tag in string.gmatch(tags, '[^ ]+') do need(#tag <= 512, 'a tag is longer than 512 bytes') end
  need(not (string.find(tags, '[^\33-\122\124\126 ]') or string.find(tags, '^ ') or string.find(tags, ' $') or string.find(tags, '  ')),
    'tags must be printable ASCII without braces, separated by single spaces')
end
local stored = entry_version(KEYS[1])

if stored and not older(stored, ver) then return { 0, stored } end
redis.call('DEL', KEYS[1])
local fields = { 'v', ver }
if value == '' then
  fields[#fields + 1] = 'n'
  fields[#fields + 1] = '1'
else
  fields[#fields + 1] = 'd'
  fields[#fields + 1] = value
end
if tags ~= '' then
  fields[#fields + 1] = 't'
  fields[#fields + 1] = tags
end
if grace > 0 then
  fields[#fields + 1] = 'g'
  fields[#fields + 1] = grace
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIRE', KEYS[1], ttl + grace)
return { 1 }
end
return run(main)
