-- cache-tag.lua: EchoMQ protocol v1. The tag index of one cache namespace, in the namespace's
-- slot (never in one script with an entry, which has its own slot). Two operations:
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
-- "add":
-- KEYS[2i-1] emq:{<ns>}:cache:tag:<tag>    zset: key -> expiry (epoch ms), for the i-th tag
-- KEYS[2i]   emq:{<ns>}:cache:mark:<tag>   string: the tag's last invalidation version
--            (1..100 tags, all of one namespace; the pair names the same tag)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  "add"
-- ARGV[3]  the writer's version: a 14-byte branded id `ver<11 base62>`
-- ARGV[4]  the cache key: 1..512 printable ASCII without space, `{` or `}`
-- ARGV[5]  the entry's life in ms (1..1000000000000): its fresh time + grace, plus the margin
--          the caller allows between this call and its cache-set
-- Returns: {1} recorded, or {0, markVersion} refused (a tag's mark is at or after ARGV[3]).
--
-- "mark":
-- KEYS[1]  emq:{<ns>}:cache:mark:<tag>
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  "mark"
-- ARGV[3]  the invalidation's version (`ver…`, minted now)
-- ARGV[4]  the fence window in ms (1..86400000): the mark's life (the tombstone window)
-- Returns: 1 marked, 0 kept (the tag holds the same or a newer mark).
--
-- Errors:  EMQ_BAD_ARG (a wrong key or argument count, keys that are not the pairs of one
--          namespace, an unknown operation, numbers that are not decimal integers in range),
--          EMQ_VERSION, EMQ_BAD_ID (a version, or a stored mark that is not one), EMQ_BAD_NAME
--          (the cache key), EMQ_BATCH_TOO_LARGE (more than 100 tags), EMQ_WRONGTYPE (an index
--          that is not a sorted set, a mark that is not a string). Every key is read before the
--          first write: a refusal writes nothing.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local V = '1'
if #KEYS < 1 or #ARGV < 4 then return redis.error_reply('EMQ_BAD_ARG expected at least 1 key and 4 arguments') end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- The 14-byte gate: namespace `ver`, 11 base62 digits, body at most 2^64-1, byte by byte.
local function badId(id)
  if type(id) ~= 'string' or #id ~= 14 or not string.match(id, '^ver[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
-- True when id a sorts strictly before id b (both 14 bytes), byte by byte.
local function older(a, b)
  for i = 1, 14 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
-- Reads a key through pcall: a WRONGTYPE reply becomes EMQ_WRONGTYPE (returned as the 2nd value).
local function read(what, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'WRONGTYPE', 1, true) then return nil, redis.error_reply('EMQ_WRONGTYPE ' .. what) end
    return nil, redis.error_reply(r.err)
  end
  return r
end
local op, ver = ARGV[2], ARGV[3]
if op ~= 'add' and op ~= 'mark' then return redis.error_reply('EMQ_BAD_ARG operation must be add or mark') end
if badId(ver) then return redis.error_reply('EMQ_BAD_ID the version is not a 14-byte ver id') end
-- Tags follow the cache-key grammar: bytes 0x21..0x7a, `|` and `~`.
local TAG = '[!-z|~]+'

if op == 'mark' then
  if #KEYS ~= 1 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG mark expects 1 key and 4 arguments') end
  local ns, tag = string.match(KEYS[1], '^emq:{([A-Za-z0-9_.%-]+)}:cache:mark:(' .. TAG .. ')$')
  if not ns or #ns > 100 or #tag > 512 then return redis.error_reply('EMQ_BAD_ARG key 1 is not a tag mark') end
  local ms = int(ARGV[4], 1, 86400000)
  if not ms then return redis.error_reply('EMQ_BAD_ARG the fence window must be an integer in 1..86400000') end
  local cur, err = read('the tag mark is not a string', 'GET', KEYS[1])
  if err then return err end
  if cur and badId(cur) then return redis.error_reply('EMQ_BAD_ID the stored tag mark is not a ver id') end
  if cur and not older(cur, ver) then return 0 end
  redis.call('SET', KEYS[1], ver, 'PX', ms)
  return 1
end

if #ARGV ~= 5 then return redis.error_reply('EMQ_BAD_ARG add expects 5 arguments') end
local n = #KEYS / 2
if #KEYS % 2 ~= 0 then return redis.error_reply('EMQ_BAD_ARG add expects pairs of keys (index, mark)') end
if n > 100 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 100 tags per call') end
local key = ARGV[4]
if #key < 1 or #key > 512 or not string.match(key, '^[!-z|~]+$') then
  return redis.error_reply('EMQ_BAD_NAME the cache key must be 1..512 printable ASCII characters without spaces or braces')
end
local life = int(ARGV[5], 1, 1000000000000)
if not life then return redis.error_reply('EMQ_BAD_ARG life must be an integer in 1..1000000000000') end
local ns
for i = 1, n do
  local ins, tag = string.match(KEYS[2 * i - 1], '^emq:{([A-Za-z0-9_.%-]+)}:cache:tag:(' .. TAG .. ')$')
  if not ins or #ins > 100 or #tag > 512 then return redis.error_reply('EMQ_BAD_ARG key ' .. (2 * i - 1) .. ' is not a tag index') end
  ns = ns or ins
  if ins ~= ns then return redis.error_reply('EMQ_BAD_ARG every tag must be of one namespace') end
  if KEYS[2 * i] ~= 'emq:{' .. ns .. '}:cache:mark:' .. tag then
    return redis.error_reply('EMQ_BAD_ARG key ' .. (2 * i) .. ' is not the mark of tag ' .. tag)
  end
end
-- Every key is read (and its type checked) before the first write.
for i = 1, n do
  local _, err = read('the tag index is not a sorted set', 'ZSCORE', KEYS[2 * i - 1], key)
  if err then return err end
  local mark
  mark, err = read('the tag mark is not a string', 'GET', KEYS[2 * i])
  if err then return err end
  if mark and badId(mark) then return redis.error_reply('EMQ_BAD_ID the stored tag mark is not a ver id') end
  if mark and not older(mark, ver) then return { 0, mark } end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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
