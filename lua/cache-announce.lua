#!lua flags=allow-oom
-- cache-announce.lua: EchoMQ protocol v2. Built from lua/src/cache-announce.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Announces that keys of one cache namespace were invalidated at a version: appends ONE entry to
-- the namespace's bounded invalidation log (all the keys of the call, in order) and signals it on
-- the namespace's sharded channel as a wake-up hint. Nodes follow the log from their own position
-- (docs/cache.md, "Coherence"); the signal only makes them read sooner, so a lost signal costs at
-- most one poll period.
-- Entry: `v <ver> k <key1> [k <key2> …]` (the field `k` repeats, in the caller's order).
-- Signal: `{"id":"<entry id>"}`, plus `"v":"<ver>","k":["<key1>",…]` when the call has at most
-- 16 keys, so a follower can drop those keys from its L1 on arrival, before its log read (which
-- still follows and stays the source of truth).
-- Flag allow-oom: it is the second half of an invalidation (cache-invalidate.lua runs under OOM),
-- and its log is capped (`MAXLEN ~`); refused, the other nodes' L1 copies would stay stale.
--
-- @key log emq:{ns}:cache:log stream: the namespace's invalidation log
-- @key signal emq:{ns}:cache:signal sharded channel of the same namespace (same slot as the log)
-- @arg version version the protocol version
-- @arg max-len 1..1000000 log length bound, applied as `MAXLEN ~`
-- @arg ver id:ver the invalidation's version
-- @arg key* bytes:1..512 the n invalidated keys (1..1000), each printable ASCII without space,
--   `{` or `}`
-- @returns the stream id `<ms>-<seq>` of the entry.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key count, fewer than 4 arguments, keys, a length
--   bound that is not a decimal integer in range), EMQ_BAD_ID (ver), EMQ_BAD_NAME (a key),
--   EMQ_BATCH_TOO_LARGE (more than 1000 keys), EMQ_WRONGTYPE (the log is not a stream). Nothing
--   is written or signalled unless every input is valid.
-- @flags allow-oom
-- @uses args ids types cache-keys
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
-- The cache's key grammar (docs/protocol.md §2): a namespace is a name (1..100 bytes of
-- `A-Za-z0-9_.-`); a cache key or tag is 1..512 bytes of printable ASCII without space and braces
-- (0x21..0x7a, `|`, `~`: the runtimes' assertCacheKey). An entry and its fill lease carry the
-- key's own hash tag, `emq:{c:<ns>:<key>}:entry|lease`; a namespace's keys share
-- `emq:{<ns>}:cache:` (`log`, `signal`, `tag:<tag>`, `mark:<tag>`).
local function cache_key_ok(s)
  return type(s) == 'string' and #s >= 1 and #s <= 512 and string.find(s, '^[!-z|~]+$') ~= nil
end
-- A cache key argument, or EMQ_BAD_NAME naming it.
local function need_cache_key(s, what)
  if not cache_key_ok(s) then fail('BAD_NAME', what .. ' must be 1..512 printable ASCII characters without spaces or braces') end
  return s
end
-- The namespace (and, for kind `tag:`/`mark:`, the tag) of a namespace key
-- `emq:{<ns>}:cache:<kind>[<tag>]`, or EMQ_BAD_ARG naming KEYS[i].
local function need_ns_key(k, kind, i)
  local ns, tag = string.match(type(k) == 'string' and k or '', '^emq:{([A-Za-z0-9_.%-]+)}:cache:' .. kind .. '(.*)$')
  local tagged = string.sub(kind, -1) == ':'
  if not ns or #ns > 100 or (tagged and not cache_key_ok(tag)) or (not tagged and tag ~= '') then
    local what = tagged and string.sub(kind, 1, -2) or kind
    fail('BAD_ARG', 'KEYS[' .. i .. '] is not a cache namespace ' .. what .. ' emq:{<ns>}:cache:' .. kind .. (tagged and '<tag>' or ''))
  end
  return ns, tag
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
local function main(KEYS, ARGV)
need(#KEYS == 2 and #ARGV >= 4, 'expected 2 keys (log, signal) and at least 4 arguments')
local ns = need_ns_key(KEYS[1], 'log', 1)
need(KEYS[2] == 'emq:{' .. ns .. '}:cache:signal', 'KEYS[2] is not the signal channel of namespace ' .. ns)
local maxLen = need_int(ARGV[2], 1, 1000000, 'log length')
local ver = need_id(ARGV[3], 'ver')
local n = #ARGV - 3
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 keys per call') end
local fields = { 'v', ver }
local signalled = {}
for i = 1, n do
  local key = need_cache_key(ARGV[3 + i], 'key ' .. i)
  fields[#fields + 1] = 'k'
  fields[#fields + 1] = key
  if n <= 16 then signalled[i] = key end
end
-- The log's first touch would be a write: check its type first.
need_type(KEYS[1], 'stream')

local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', unpack(fields))
local hint = { id = id }
if n <= 16 then
  hint.v = ver
  hint.k = signalled
end
redis.call('SPUBLISH', KEYS[2], cjson.encode(hint))
return id
end
return run(main)
