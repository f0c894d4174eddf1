-- cache-tag.lua: EchoMQ protocol v2. Built from lua/src/cache-tag.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- The tag index of one cache namespace, in the namespace's slot (never in one script with an
-- entry, which has its own slot). Two operations:
--
-- "add": a tagged write, after its value was validated and BEFORE its cache-set.lua, records its
-- key in the index of each of its tags: a sorted set scored by the key's expiry (server clock,
-- `ZADD GT`: a member's expiry only grows). It first checks each tag's mark: when a tag was
-- invalidated (invalidateTag) at a version at or after the writer's version, the write began
-- before that invalidation and must not land: nothing is written and the mark is returned (the
-- caller then skips its cache-set). Each add also prunes up to 100 expired members of each index
-- and sets the index to expire when its last member does (`PEXPIREAT` = the highest score), so
-- an index holds about the live entries of its tag and vanishes with them.
--
-- "mark": an invalidateTag, before it walks the index (ZSCAN), records its version as the tag's
-- mark for the fence window, unless a newer mark is held. A writer whose add comes after the mark
-- and whose version is older is refused by it; one whose add came before is in the index, so
-- the walk tombstones its entry (cache-invalidate.lua), which fences its cache-set.
--
-- No script flag: "add" grows the indexes (a write under OOM is refused at its first write, as a
-- legacy script); one script serves both operations, so "mark" is refused the same way.
--
-- @key index* emq:{<ns>}:cache:tag:<tag> add: zset key -> expiry (epoch ms), KEYS[2i-1] for the
--   i-th tag (1..100 tags, all of one namespace)
-- @key mark* emq:{<ns>}:cache:mark:<tag> string: the tag's last invalidation version; add:
--   KEYS[2i], the mark of the same tag; mark: the only key
-- @arg version version the protocol version
-- @arg op add|mark the operation
-- @arg ver id:ver add: the writer's version; mark: the invalidation's version (minted now)
-- @arg subject text add: the cache key (1..512 printable ASCII without space, `{` or `}`);
--   mark: the fence window in ms (1..86400000), the mark's life (the tombstone window)
-- @arg life? 1..1000000000000 add only: the entry's life in ms: its fresh time + grace, plus the
--   margin the caller allows between this call and its cache-set
-- @mode add KEYS the (index, mark) pair of each tag; ARGV version, `add`, ver, key, life
-- @mode mark KEYS the tag's mark; ARGV version, `mark`, ver, window ms
-- @returns add: {1} recorded, or {0, markVersion} refused (a tag's mark is at or after ver).
--   mark: 1 marked, 0 kept (the tag holds the same or a newer mark).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, keys that are not the pairs of
--   one namespace, an unknown operation, numbers that are not decimal integers in range),
--   EMQ_BAD_ID (a version, or a stored mark that is not one), EMQ_BAD_NAME (the cache key),
--   EMQ_BATCH_TOO_LARGE (more than 100 tags), EMQ_WRONGTYPE (an index that is not a sorted set,
--   a mark that is not a string). Every key is read before the first write: a refusal writes
--   nothing.
-- @uses args ids types clock cache-keys cache-versions
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
need(#KEYS >= 1 and #ARGV >= 4, 'expected at least 1 key and 4 arguments')
local op = need_word(ARGV[2], { add = true, mark = true }, 'operation')
local ver = need_id(ARGV[3], 'ver')
-- A tag's mark (GET, WRONGTYPE checked), or EMQ_BAD_ID when it holds something else than a ver id.
local function mark_of(key)
  local m = checked(redis.pcall('GET', key), key)
  if m and bad_id(m, 'ver') then fail('BAD_ID', 'the stored tag mark is not a ver id') end
  return m
end

if op == 'mark' then
  need(#KEYS == 1 and #ARGV == 4, 'mark expects 1 key and 4 arguments')
  need_ns_key(KEYS[1], 'mark:', 1)
  local ms = need_int(ARGV[4], 1, 86400000, 'the fence window')
  local cur = mark_of(KEYS[1])
  if cur and not older(cur, ver) then return 0 end
  redis.call('SET', KEYS[1], ver, 'PX', ms)
  return 1
end

need(#ARGV == 5, 'add expects 5 arguments')
local n = #KEYS / 2
need(#KEYS % 2 == 0, 'add expects pairs of keys (index, mark)')
if n > 100 then fail('BATCH_TOO_LARGE', 'at most 100 tags per call') end
local key = need_cache_key(ARGV[4], 'the cache key')
local life = need_int(ARGV[5], 1, 1000000000000, 'life')
local ns
for i = 1, n do
  local ins, tag = need_ns_key(KEYS[2 * i - 1], 'tag:', 2 * i - 1)
  ns = ns or ins
  need(ins == ns, 'every tag must be of one namespace')
  need(KEYS[2 * i] == 'emq:{' .. ns .. '}:cache:mark:' .. tag, 'KEYS[' .. (2 * i) .. '] is not the mark of tag ' .. tag)
end
-- Every key is read (and its type checked) before the first write.
for i = 1, n do
  checked(redis.pcall('ZSCORE', KEYS[2 * i - 1], key), KEYS[2 * i - 1])
  local mark = mark_of(KEYS[2 * i])
  if mark and not older(mark, ver) then return { 0, mark } end
end

local now = now_ms()
local expiry = now + life
for i = 1, n do
  local index = KEYS[2 * i - 1]
  redis.call('ZADD', index, 'GT', expiry, key)
  local gone = redis.call('ZRANGE', index, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, 100)
  if #gone > 0 then redis.call('ZREM', index, unpack(gone)) end
  local top = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', index, tonumber(top[2]))
end
return { 1 }
end
return run(main)
