-- Sets a queue's stored policy (docs/protocol.md §5, "Rate limits" and "Group policy"): the rate
-- limit in meta `rate` = "<max> <ms>" and the group policy of fair lanes in meta `gpol` (its
-- text). claim.lua reads both in its one meta read and enforces them on every claim, whichever
-- runtime sends it: a claim carries no limits, so a queue has one rule, the stored one.
-- A policy with a cap sets meta `gcap` = 1 (complete.lua then keeps the groups' live counts);
-- it stays set when the policy goes. When anything changed and `wake` is empty, one wake marker
-- is pushed: a claim blocked by the old policy may now take work (chain wake-up reaches the
-- others). Every number is a decimal integer: no sign, fraction, exponent or blank.
--
-- @key meta emq:{q}:meta queue meta hash (`rate`, `gpol`, `gcap`)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @arg version version the protocol version
-- @arg action set what to do
-- @arg rate-max 0..1000000 the rate limit's jobs per window (0 = no rate limit)
-- @arg rate-ms 0..86400000 the rate limit's window in ms (0 exactly when rate-max is 0)
-- @arg groups policy the group policy ("" = none): space-separated entries
--   `<who>=<cap>,<weight>,<rate max>,<rate ms>`, who `*` (every group; required) or `g:<group>`
--   (one group; at most 1000 entries, 65536 bytes): at most cap jobs of a group active at once
--   (0 = no cap; 1..100000), weight jobs per turn of the rotation (1..1000), at most rate max
--   jobs per rate ms window (0,0 = none; 1..1000000 per 1..86400000)
-- @returns { changed, previous rate, previous groups }: changed 1 when a field was written, else
--   0 (the stored policy already was this one: nothing written); previous rate "" (none) or
--   "<max> <ms>"; previous groups "" (none) or the text stored before.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the
--   key grammar spells for the queue of KEYS[1], an unknown action, a rate out of range or with
--   only one of its two numbers 0, a malformed group policy), EMQ_WRONGTYPE. Every check comes
--   before the first write.
-- @flags allow-oom
-- @uses args keys types meta policy-text
need(#KEYS == 2 and #ARGV == 5, 'expected 2 keys and 5 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'wake' })
need_word(ARGV[2], { set = true }, 'the action')
local rmax, rms = policy_rate(ARGV[3], ARGV[4])
if not rmax then fail('BAD_ARG', 'rate limit must be 0 0 (none) or 1..1000000 jobs per 1..86400000 ms') end
local groups = ARGV[5]
local cap = false
if groups ~= '' then
  local _, c = policy_groups(groups)
  cap = c
end
local meta = queue_meta(KEYS[1])
need_type(KEYS[2], 'list')
local rate = rmax > 0 and (rmax .. ' ' .. rms) or nil
local gpol = groups ~= '' and groups or nil
local was_rate, was_gpol = meta.rate or nil, meta.gpol or nil -- (an absent field reads as false)
local changed = 0
if rate ~= was_rate then
  if rate then redis.call('HSET', KEYS[1], 'rate', rate) else redis.call('HDEL', KEYS[1], 'rate') end
  changed = 1
end
if gpol ~= was_gpol then
  if gpol then redis.call('HSET', KEYS[1], 'gpol', gpol) else redis.call('HDEL', KEYS[1], 'gpol') end
  changed = 1
end
if cap and meta.gcap ~= '1' then redis.call('HSET', KEYS[1], 'gcap', '1') end
if changed == 1 and redis.call('LLEN', KEYS[2]) == 0 then redis.call('LPUSH', KEYS[2], '1') end
return { changed, was_rate or '', was_gpol or '' }
