-- Reads 1..N cache entries atomically (read-only): each one's fields and its remaining life on
-- the server clock, in one command. A call of N > 1 entries touches N hash tags: it is legal only
-- where every key is on one node (a standalone Valkey); a cluster client reads one entry per call.
-- Flag no-writes: it never writes, so it runs under OOM and on a replica.
--
-- @key entry* emq:{c:<ns>:<key>}:entry entry i's hash (KEYS[2i-1])
-- @key lease* emq:{c:<ns>:<key>}:lease entry i's fill lease (KEYS[2i], the same cache key)
-- @arg version version the protocol version
-- @arg lease-flags text one lease flag per entry, in order ("1" = also report whether entry i's
--   fill lease is held, "0" = not): a string of N characters, each 0 or 1
-- @returns N groups of 7, flat: { v, d, n, x, g, pttl, leased, v, d, … } (absent fields as false;
--   pttl as PTTL reports it; leased 1/0). One entry (N = 1) is exactly one group.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (an odd or zero key count, a wrong argument count, keys that
--   are not the entry and lease keys of one cache key each, lease flags that are not N characters
--   of 0/1), EMQ_WRONGTYPE (an entry is not a hash: the whole call fails; a caller that batched
--   reads re-reads them one by one). Writes nothing.
-- @flags no-writes
-- @uses fail types cache-keys
local n = #KEYS
need(n >= 2 and n % 2 == 0 and #ARGV == 2, 'expected 2 keys per entry and 2 arguments')
for i = 1, n, 2 do
  local tag = need_entry_key(KEYS[i], 'entry', i)
  need(KEYS[i + 1] == 'emq:{' .. tag .. '}:lease', 'KEYS[' .. (i + 1) .. '] must be the lease of the entry KEYS[' .. i .. ']')
end
local flags = ARGV[2]
need(#flags == n / 2 and not string.find(flags, '[^01]'), 'lease flags must be one 0 or 1 per entry')
local out, o = {}, 0
for i = 1, n, 2 do
  local e = KEYS[i]
  local f = checked(redis.pcall('HMGET', e, 'v', 'd', 'n', 'x', 'g'), e)
  local leased = 0
  if string.byte(flags, (i + 1) / 2) == 49 then leased = redis.call('EXISTS', KEYS[i + 1]) end
  out[o + 1] = f[1]
  out[o + 2] = f[2]
  out[o + 3] = f[3]
  out[o + 4] = f[4]
  out[o + 5] = f[5]
  out[o + 6] = redis.call('PTTL', e)
  out[o + 7] = leased
  o = o + 7
end
return out
