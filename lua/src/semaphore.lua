-- A counting semaphore on a name (docs/coordination.md): at most `limit` holders at once, each
-- permit a lease on the server clock (a zset member whose score is its expiry), so a crashed
-- holder's permit is counted out when its expiry passes. Expired permits are removed by every
-- write (acquire, renew, release). The limit is the caller's: callers of one name must agree.
-- Flag allow-oom: an acquire adds at most one member while fewer than `limit` are live, and every
-- write first removes the expired ones, so the zset stays bounded by the largest limit used;
-- refusing renewals and releases under OOM would drop every holder when memory is full.
--
-- @key sem emq:{co:<name>}:sem zset: member = holder id, score = its permit's expiry (server ms)
-- @arg version version the protocol version
-- @arg op acquire|renew|release|read what to do
-- @arg holder bytes:1..64 the permit's holder id: printable ASCII without spaces
-- @arg limit 0..100000 the most holders at once, 1..100000 for acquire; ignored otherwise (pass "0")
-- @arg ttl 0..3600000 the permit in ms: 100..3600000 for acquire and renew; ignored otherwise (pass "0")
-- @returns an array of 3 integers {status, count, exp}. acquire: {1, live count, expiry} when the
--   holder holds a permit (a new one while fewer than limit are live, or its own renewed), else
--   {0, live count, the earliest expiry of a live permit}. renew: {1, count, expiry} iff the holder's
--   permit is live, else {0, count, 0} (an expired permit may already be counted out: stop).
--   release: {1, count, 0} when a permit was removed, {0, count, 0} when there was none. read
--   (no write): {live count, 0, 0}.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not
--   emq:{co:<name>}:sem, an unknown operation, a bad holder, a limit or ttl out of range),
--   EMQ_WRONGTYPE (the key is not a zset). Every check comes before the first write.
-- @flags allow-oom
-- @uses args types clock coord-keys
need(#KEYS == 1 and #ARGV == 5, 'expected 1 key and 5 arguments')
local key = KEYS[1]
need_co_key(key, 'sem')
local op = need_word(ARGV[2], { acquire = true, renew = true, release = true, read = true }, 'operation')
local holder = need_holder(ARGV[3], 'holder')
local limit = need_int(ARGV[4], op == 'acquire' and 1 or 0, 100000, 'limit')
local ttl = need_int(ARGV[5], (op == 'acquire' or op == 'renew') and 100 or 0, 3600000, 'ttl')
local total = checked(redis.pcall('ZCARD', key), key)

local now = now_ms()
if op == 'read' then return { redis.call('ZCOUNT', key, '(' .. decimal(now), '+inf'), 0, 0 } end
local count = total - redis.call('ZREMRANGEBYSCORE', key, '-inf', decimal(now))
if op == 'release' then
  local gone = redis.call('ZREM', key, holder)
  return { gone, count - gone, 0 }
end
local mine = redis.call('ZSCORE', key, holder)
if mine or (op == 'acquire' and count < limit) then
  redis.call('ZADD', key, decimal(now + ttl), holder)
  return { 1, mine and count or count + 1, now + ttl }
end
if op == 'renew' then return { 0, count, 0 } end
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return { 0, count, tonumber(first[2]) }
