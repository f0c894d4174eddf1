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
