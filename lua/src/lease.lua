-- A fenced lease on a name (docs/coordination.md): one holder at a time on the server clock, and a
-- fencing token per acquisition that is greater than every token issued for the name before, so a
-- resource that refuses a lower token than the highest it accepted never takes a write from a
-- holder that was superseded (a paused holder does not know it lost; its token tells).
-- The lease is one hash WITHOUT a TTL: its `fence` (the highest token issued) must outlive every
-- holder, and no eviction policy drops a key without a TTL (volatile-*); a lease is over when
-- `exp` has passed on the server clock, not when a key goes. A new token is at least
-- now_ms × 1000, so tokens keep increasing even when a restart without persistence loses the hash
-- (while the server clock moves forward; 1000 acquisitions per ms before the counter part leads).
-- Flag allow-oom: a call writes at most four fields of one hash per name, so it cannot grow memory
-- without bound; refusing a renewal under OOM would drop every holder exactly when memory is full.
--
-- @key lease emq:{co:<name>}:lease hash: owner, token (of the current or last holder), exp (server ms; 0 = released), fence (the highest token issued, never lowered)
-- @arg version version the protocol version
-- @arg op acquire|renew|release|read what to do
-- @arg owner bytes:1..64 the caller's identity: printable ASCII without spaces
-- @arg token token "" for acquire and read; the token held, for renew and release
-- @arg ttl 0..3600000 the lease in ms: 100..3600000 for acquire and renew; ignored by release and
--   read (pass "0")
-- @returns an array {status, owner, token, exp}: status (integer) 1 done, 0 refused; owner (bulk),
--   token (bulk, decimal; "" when none) and exp (integer server ms, 0 = released) are the lease's
--   after a success, the current holder's after a refusal. acquire: taken (a new token) or renewed
--   (re-entrant: this owner holds it unexpired; same token); 0 while another owner holds it
--   unexpired. renew: 1 iff this owner holds this token (the newest), even past its expiry (no
--   newer token exists); exp = now + ttl. release: 1 iff this owner holds this token; owner "" and
--   exp 0, so the next acquire succeeds at once. read writes nothing: status 1 iff held (owner not
--   "" and exp in the future).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not
--   emq:{co:<name>}:lease, an unknown operation, a bad owner, a token that is not "" for acquire
--   and read or not decimal digits for renew and release, a ttl out of range), EMQ_WRONGTYPE (the
--   key is not a hash, or a hash whose exp or fence is not a decimal integer). Every check comes
--   before the first write.
-- @flags allow-oom
-- @uses args types clock coord-keys
need(#KEYS == 1 and #ARGV == 5, 'expected 1 key and 5 arguments')
local key = KEYS[1]
need_co_key(key, 'lease')
local op = need_word(ARGV[2], { acquire = true, renew = true, release = true, read = true }, 'operation')
local owner = need_holder(ARGV[3], 'owner')
local token = ARGV[4]
local writes = op == 'renew' or op == 'acquire'
if op == 'renew' or op == 'release' then need_token(token) else need(token == '', 'the token of an ' .. op .. ' must be ""') end
local ttl = need_int(ARGV[5], writes and 100 or 0, 3600000, 'ttl')
local h = checked(redis.pcall('HMGET', key, 'owner', 'token', 'exp', 'fence'), key)
-- HMGET answers false for an absent field.
local held_by, held_token, fence = h[1] or '', h[2] or '', h[4] or nil
if not string.match(h[3] or '0', '^%d+$') or (fence and not string.match(fence, '^%d+$')) then
  fail('WRONGTYPE', key .. ' is not a lease (exp and fence must be decimal integers)')
end
local exp = tonumber(h[3] or '0')

local now = now_ms()
local live = held_by ~= '' and exp > now
local current = { 0, held_by, held_token, exp }
if op == 'read' then
  current[1] = live and 1 or 0
  return current
end
if op == 'acquire' then
  if live and held_by ~= owner then return current end
  local until_ms = decimal(now + ttl)
  if live then -- re-entrant: this owner holds it; same token, later expiry
    redis.call('HSET', key, 'exp', until_ms)
    return { 1, owner, held_token, now + ttl }
  end
  local t = decimal(math.max((tonumber(fence) or 0) + 1, now * 1000))
  redis.call('HSET', key, 'owner', owner, 'token', t, 'exp', until_ms, 'fence', t)
  return { 1, owner, t, now + ttl }
end
-- renew and release: only the newest token's owner.
if fence ~= token or held_by ~= owner then return current end
if op == 'renew' then
  redis.call('HSET', key, 'exp', decimal(now + ttl))
  return { 1, owner, token, now + ttl }
end
redis.call('HSET', key, 'owner', '', 'exp', '0')
return { 1, owner, token, 0 }
