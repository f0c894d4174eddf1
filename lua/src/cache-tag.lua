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
