-- node.lua: EchoMQ protocol v1. Claims, renews or releases a node number (0..1023) for one
-- process, as a lease on the server clock, so two live processes never mint snowflakes with the
-- same node number. Leases live in one hash without a TTL (`{emq}:nodes`), so no eviction policy
-- can drop one (volatile-* policies only evict keys with a TTL, allkeys-* are refused by the
-- runtime); a lease is over when its expiry has passed on the server clock, not when a key goes.
--
-- KEYS[1]  {emq}:node-seq  string: counter that spreads claims over the node numbers
-- KEYS[2]  {emq}:nodes     hash: field = node number (decimal), value = "<owner> <expires-at ms>"
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  owner: a random token naming the process (1..64 bytes of printable ASCII, no spaces)
-- ARGV[3]  lease in ms (decimal integer, 1000..3600000), or "0" to release the number in ARGV[4]
--          (its lease then ends 1000 ms later, so same-millisecond ids of two holders never meet)
-- ARGV[4]  the number to renew or release (decimal integer, 0..1023), or "" to claim any number
--          that is free (never leased, released, or expired)
-- Returns: an integer: the node number held (claimed or renewed) or released; -1 when the number
--          to renew is held by another owner whose lease has not expired, the number to release
--          is not ours (or its lease is over), or every number is taken. Renewing a number whose lease expired, or that
--          is free, takes it again (the caller stopped minting when its lease became uncertain).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments), EMQ_VERSION, EMQ_WRONGTYPE (nodes not a
--          hash, node-seq not an integer counter). Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 2 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 2 keys and 4 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local owner, ttl, want = ARGV[2], int(ARGV[3], 0, 3600000), ARGV[4]
if #owner < 1 or #owner > 64 or not string.match(owner, '^[!-~]+$') then
  return redis.error_reply('EMQ_BAD_ARG owner must be 1..64 bytes of printable ASCII without spaces')
end
if not ttl or (ttl > 0 and ttl < 1000) then return redis.error_reply('EMQ_BAD_ARG lease must be an integer in 1000..3600000 ms, or 0 to release') end
local n = nil
if want ~= '' then
  n = int(want, 0, 1023)
  if not n then return redis.error_reply('EMQ_BAD_ARG node number must be an integer in 0..1023') end
end
if ttl == 0 and not n then return redis.error_reply('EMQ_BAD_ARG a release names its node number') end
local probe = redis.pcall('HLEN', KEYS[2])
if type(probe) == 'table' then return redis.error_reply('EMQ_WRONGTYPE the node lease key is not a hash') end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The owner of a lease value, and whether the lease is over (absent, expired or unreadable).
local function lease(v)
  if not v then return nil, true end
  local o, exp = string.match(v, '^(%S+) (%d+)$')
  return o, not o or tonumber(exp) <= now
end
local value = owner .. ' ' .. (now + ttl)
if n then
  local o, over = lease(redis.call('HGET', KEYS[2], n))
  if ttl == 0 then
    -- Released: the lease ends one second from now (not at once), so the next holder's ids never
    -- share a millisecond with the last ids minted under this lease.
    if o ~= owner or over then return -1 end
    redis.call('HSET', KEYS[2], n, owner .. ' ' .. (now + 1000))
    return n
  end
  if o ~= owner and not over then return -1 end
  redis.call('HSET', KEYS[2], n, value)
  return n
end
local seq = redis.pcall('GET', KEYS[1])
if type(seq) == 'table' or (seq and (#seq > 18 or not string.match(seq, '^%d+$'))) then
  return redis.error_reply('EMQ_WRONGTYPE the node-seq key is not an integer counter')
end
local start = redis.call('INCR', KEYS[1]) % 1024
for i = 0, 1023 do
  local m = (start + i) % 1024
  local _, over = lease(redis.call('HGET', KEYS[2], m))
  if over then
    redis.call('HSET', KEYS[2], m, value)
    return m
  end
end
return -1
