-- The registry of known queues, topics and cache namespaces: a process announces a name as it
-- starts using it (a producer at its first enqueue or publish, a consumer as it starts), so
-- operators list them without a SCAN of the keyspace. Each registry is a zset of names, all at
-- score 0, so it pages in name order (ZRANGE BYLEX). The registries are cluster-wide keys: KEYS[1]
-- must be exactly one of the three, never another key of the `{emq}:` reserve.
-- No flag: an `add` grows a registry (one member per name), so the call is refused under OOM at
-- its first write as a legacy script is (a shebang without allow-oom would refuse a `del` too).
--
-- @key registry {emq}:queues|{emq}:topics|{emq}:caches the registry: zset of names, all at score 0
-- @arg version version the protocol version
-- @arg action add|del what to do
-- @arg names* text 1..1000 names, each of the key grammar (`^[A-Za-z0-9_.-]{1,100}$`)
-- @returns the number of names added (or removed) that were not (or were) there.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, another key, an unknown action,
--   no names or more than 1000), EMQ_BAD_NAME, EMQ_WRONGTYPE. Every check comes before the first
--   write.
-- @uses args types
need(#KEYS == 1 and #ARGV >= 3 and #ARGV <= 1002, 'expected 1 key and 3..1002 arguments')
local k = need_word(KEYS[1], { ['{emq}:queues'] = true, ['{emq}:topics'] = true, ['{emq}:caches'] = true }, 'KEYS[1]')
local add = need_word(ARGV[2], { add = true, del = true }, 'the action') == 'add'
local args = {}
for i = 3, #ARGV do
  local n = ARGV[i]
  if #n < 1 or #n > 100 or not string.match(n, '^[A-Za-z0-9_.-]+$') then
    fail('BAD_NAME', 'a registered name must match ^[A-Za-z0-9_.-]{1,100}$')
  end
  if add then args[#args + 1] = 0 end
  args[#args + 1] = n
end
need_type(k, 'zset')
if add then return redis.call('ZADD', k, unpack(args)) end
return redis.call('ZREM', k, unpack(args))
