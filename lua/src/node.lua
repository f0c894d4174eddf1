-- Claims, renews or releases a node number (0..1023) for one process, as a lease on the server
-- clock, so two live processes never mint snowflakes with the same node number. Leases live in
-- one hash without a TTL (`{emq}:nodes`), so no eviction policy can drop one (volatile-* policies
-- only evict keys with a TTL, allkeys-* are refused by the runtime); a lease is over when its
-- expiry has passed on the server clock, not when a key goes. The two keys are cluster-wide and
-- must be exactly `{emq}:node-seq` and `{emq}:nodes`: a caller passing any other key (a stale
-- runtime's `{emq}:node:`) would lease into a private hash no other process reads, so two live
-- owners could hold one number; it is refused (EMQ_BAD_ARG) with nothing written.
-- Flag allow-oom: a claim or renewal rewrites one field of a hash bounded at 1024 fields, and a
-- release frees a number, so the call cannot grow memory without bound; refusing it under OOM
-- would stop a process from renewing its lease (and from minting ids) exactly when memory is full.
--
-- The optional third key and fifth argument (together: the describing form) let the process
-- describe itself on the renewal it already sends (docs/protocol.md §1, "Process descriptions"):
-- `{emq}:procs` field = node number, value = "<owner> <heartbeat ms> <info JSON>". A claim or
-- renewal writes the entry of the number it holds (or deletes it for an info of ""), a release
-- deletes it, and a claim also deletes the entries of numbers whose lease is over or held by
-- another owner (at most 1024 fields read, at a claim only). The hash stays bounded: at most 1024
-- fields of at most 8192 bytes of info each. The two-key form reads and writes no `{emq}:procs`.
--
-- @key node-seq {emq}:node-seq string: counter that spreads claims over the node numbers
-- @key nodes {emq}:nodes hash: field = node number (decimal), value = "<owner> <expires-at ms>"
-- @key procs? {emq}:procs hash: field = node number, value = "<owner> <heartbeat ms> <info JSON>"
-- @arg version version the protocol version
-- @arg owner bytes:1..64 a random token naming the process (printable ASCII, no spaces)
-- @arg lease 0..3600000 lease in ms (1000..3600000), or "0" to release the number in `number`
--   (its lease then ends 1000 ms later, so same-millisecond ids of two holders never meet)
-- @arg number ""|0..1023 the number to renew or release, or "" to claim any number that is free
--   (never leased, released, or expired)
-- @arg info? ""|bytes:2..8192 with the procs key: the process's description, a JSON object
--   without control characters (`""` = none: the entry is deleted); ignored by a release
-- @returns an integer: the node number held (claimed or renewed) or released; -1 when the number
--   to renew is held by another owner whose lease has not expired, the number to release is not
--   ours (or its lease is over), or every number is taken. Renewing a number whose lease
--   expired, or that is free, takes it again (the caller stopped minting when its lease became
--   uncertain).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count: 2 keys and 4 arguments, or
--   3 and 5; a key other than `{emq}:node-seq`, `{emq}:nodes`, `{emq}:procs`; missing or
--   malformed arguments, an info that is not a JSON object of at most 8192 bytes without control
--   characters), EMQ_WRONGTYPE (nodes or procs not a hash, node-seq not an integer counter).
--   Every check comes before the first write.
-- @flags allow-oom
-- @uses args types clock
local described = #KEYS == 3
need((#KEYS == 2 and #ARGV == 4) or (described and #ARGV == 5), 'expected 2 keys and 4 arguments, or 3 keys and 5')
need(KEYS[1] == '{emq}:node-seq' and KEYS[2] == '{emq}:nodes', 'KEYS must be {emq}:node-seq and {emq}:nodes')
need(not described or KEYS[3] == '{emq}:procs', 'KEYS[3] must be {emq}:procs')
local owner, ttl, want = ARGV[2], int(ARGV[3], 0, 3600000), ARGV[4]
need(#owner >= 1 and #owner <= 64 and string.match(owner, '^[!-~]+$'), 'owner must be 1..64 bytes of printable ASCII without spaces')
need(ttl and (ttl == 0 or ttl >= 1000), 'lease must be an integer in 1000..3600000 ms, or 0 to release')
local n = nil
if want ~= '' then n = need_int(want, 0, 1023, 'node number') end
need(ttl > 0 or n, 'a release names its node number')
checked(redis.pcall('HLEN', KEYS[2]), KEYS[2])
local info = ARGV[5]
if described then
  need(#info <= 8192 and not string.find(info, '%c'), 'info must be at most 8192 bytes without control characters')
  if info ~= '' then
    local ok, obj = pcall(cjson.decode, info)
    need(ok and type(obj) == 'table' and string.sub(info, 1, 1) == '{', 'info must be a JSON object')
  end
  checked(redis.pcall('HLEN', KEYS[3]), KEYS[3])
end

local now = now_ms()
-- The owner of a lease value, and whether the lease is over (absent, expired or unreadable).
local function lease(v)
  if not v then return nil, true end
  local o, exp = string.match(v, '^(%S+) (%d+)$')
  return o, not o or tonumber(exp) <= now
end
local value = owner .. ' ' .. (now + ttl)
-- The describing form: the entry of the number just held (deleted for an info of "" or a release).
local function describe(m, held)
  if not described then return end
  if held and info ~= '' then
    redis.call('HSET', KEYS[3], m, owner .. ' ' .. now .. ' ' .. info)
  else
    redis.call('HDEL', KEYS[3], m)
  end
end
if n then
  local o, over = lease(redis.call('HGET', KEYS[2], n))
  if ttl == 0 then
    -- Released: the lease ends one second from now (not at once), so the next holder's ids never
    -- share a millisecond with the last ids minted under this lease.
    if o ~= owner or over then return -1 end
    redis.call('HSET', KEYS[2], n, owner .. ' ' .. (now + 1000))
    describe(n, false)
    return n
  end
  if o ~= owner and not over then return -1 end
  redis.call('HSET', KEYS[2], n, value)
  describe(n, true)
  return n
end
local seq = redis.pcall('GET', KEYS[1])
if type(seq) == 'table' or (seq and (#seq > 18 or not string.match(seq, '^%d+$'))) then
  fail('WRONGTYPE', 'the node-seq key is not an integer counter')
end
local start = redis.call('INCR', KEYS[1]) % 1024
for i = 0, 1023 do
  local m = (start + i) % 1024
  local _, over = lease(redis.call('HGET', KEYS[2], m))
  if over then
    redis.call('HSET', KEYS[2], m, value)
    if described then
      -- A claim prunes the descriptions whose lease is over or held by another owner (a process
      -- that crashed, or an old runtime's claim of the number), then writes its own.
      local all = redis.call('HGETALL', KEYS[3])
      for j = 1, #all, 2 do
        local o2, over2 = lease(redis.call('HGET', KEYS[2], all[j]))
        if over2 or o2 ~= string.match(all[j + 1], '^(%S+)') then redis.call('HDEL', KEYS[3], all[j]) end
      end
      describe(m, true)
    end
    return m
  end
end
return -1
