-- The cross-process fill lease of one cache key: among the nodes that miss the same cold key at
-- once, the one that takes the lease loads; the others poll the entry briefly (or serve stale)
-- instead of stampeding the origin. The lease expires by itself, so a crashed loader only delays
-- the others by the lease time.
-- No script flag: `take` writes a new key, so under OOM it is refused at its SET, as a legacy
-- script; `drop` (a DEL) still runs then.
--
-- @key lease emq:{c:<ns>:<key>}:lease string: the holder's token (same slot as the entry)
-- @arg version version the protocol version
-- @arg op take|drop "take" (set with PX when absent) or "drop" (delete only if held by this token)
-- @arg token bytes:1..64 the holder's token: characters [0-9A-Za-z_-]
-- @arg ms 1..600000 lease ms (ignored by "drop", still validated)
-- @returns 1 taken / dropped, 0 held by another token / not ours.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not a lease key,
--   a bad operation or token, lease ms not a decimal integer in range), EMQ_WRONGTYPE (the lease
--   is not a string). The lease is read before any write: a refusal writes nothing.
-- @uses args types cache-keys
need(#KEYS == 1 and #ARGV == 4, 'expected 1 key and 4 arguments')
need_entry_key(KEYS[1], 'lease', 1)
local op = need_word(ARGV[2], { take = true, drop = true }, 'operation')
local token = ARGV[3]
need(#token >= 1 and #token <= 64 and string.match(token, '^[0-9A-Za-z_-]+$'), 'token must be 1..64 characters [0-9A-Za-z_-]')
local ms = need_int(ARGV[4], 1, 600000, 'lease ms')
local held = checked(redis.pcall('GET', KEYS[1]), KEYS[1])

if op == 'take' then
  if held then return 0 end
  redis.call('SET', KEYS[1], token, 'PX', ms)
  return 1
end
if held == token then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
