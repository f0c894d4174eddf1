-- Sets a queue's stored policy (docs/protocol.md §5, "Rate limits" and "Group policy"): the rate
-- limit in meta `rate` = "<max> <ms>" and the group policy of fair lanes in meta `gpol` (its
-- text). claim.lua reads both in its one meta read and enforces them on every claim, whichever
-- runtime sends it: a claim carries no limits, so a queue has one rule, the stored one.
-- A policy with a cap sets meta `gcap` = 1 (complete.lua then keeps the groups' live counts);
-- it stays set when the policy goes. When anything changed and `wake` is empty, one wake marker
-- is pushed: a claim blocked by the old policy may now take work (chain wake-up reaches the
-- others). Every number is a decimal integer: no sign, fraction, exponent or blank.
-- The rate limit's window is fixed (`rate` = "<max> <ms>": counted per window opened by a claim,
-- so up to 2 x max may start across a window's end) unless ARGV[6] is `sliding` (`rate` =
-- "<max> <ms> sliding": at most max in any ms-long span); a call without ARGV[6] stores a fixed
-- window, as before it existed. A lane's window is the same choice per entry of the group policy
-- (`,sliding` ends the entry).
-- Pausing a lane (mode lane): meta `gpaused` lists the paused lanes (group names separated by
-- spaces, at most 1000); every claim passes a paused lane over (it gives no job, its jobs do
-- not count as remaining, its running jobs finish) while the other lanes go on at their weights.
-- A resume that changed something pushes one wake marker when `wake` is empty.
--
-- @key meta emq:{q}:meta queue meta hash (`rate`, `gpol`, `gcap`)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @mode set 2 keys, 5 or 6 arguments (version, `set`, rate max, rate ms, groups, window?):
--   replaces the stored policy.
-- @mode lane 2 keys, 3 arguments (version, `pause` or `resume`, a group name): pauses or resumes
--   one lane, fleet-wide.
-- @arg version version the protocol version
-- @arg action set|pause|resume what to do
-- @arg target text mode set: the rate limit's jobs per window, 0..1000000 (0 = no rate limit);
--   mode lane: the group name to pause or resume (1..100 of A-Za-z0-9_.-)
-- @arg rate-ms? 0..86400000 (mode set) the rate limit's window in ms (0 exactly when the rate
--   max is 0)
-- @arg groups? policy (mode set) the group policy ("" = none): space-separated entries
--   `<who>=<cap>,<weight>,<rate max>,<rate ms>[,sliding]`, who `*` (every group; required) or
--   `g:<group>` (one group; at most 1000 entries, 65536 bytes): at most cap jobs of a group
--   active at once (0 = no cap; 1..100000), weight jobs per turn of the rotation (1..1000), at
--   most rate max jobs per rate ms window (0,0 = none; 1..1000000 per 1..86400000), the window
--   fixed, or sliding when the entry ends `,sliding` (only with a rate)
-- @arg window? fixed|sliding (mode set) the queue rate limit's window; absent = fixed; sliding
--   only with a rate limit
-- @returns mode set: { changed, previous rate, previous groups }: changed 1 when a field was
--   written, else 0 (the stored policy already was this one: nothing written); previous rate ""
--   (none), "<max> <ms>" or "<max> <ms> sliding"; previous groups "" (none) or the text stored
--   before. Mode lane: 1 changed / 0 the lane already was in that state (nothing written).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the
--   key grammar spells for the queue of KEYS[1], an unknown action, a rate out of range or with
--   only one of its two numbers 0, a sliding window without a rate, a malformed group policy, a
--   bad group name, a 1001st paused lane), EMQ_WRONGTYPE. Every check comes before the first
--   write.
-- @flags allow-oom
-- @uses args keys types meta policy-text
need(#KEYS == 2 and (#ARGV == 3 or #ARGV == 5 or #ARGV == 6), 'expected 2 keys and 3, 5 or 6 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'wake' })
local action = need_word(ARGV[2], { set = true, pause = true, resume = true }, 'the action')
if action ~= 'set' then
  need(#ARGV == 3, 'pause and resume take 3 arguments: version, action, lane')
  local g = ARGV[3]
  need(#g >= 1 and #g <= 100 and not string.find(g, '[^A-Za-z0-9_.-]'), 'the lane must be 1..100 of A-Za-z0-9_.-')
  queue_meta(KEYS[1]) -- (its data version checked)
  local was = checked(redis.pcall('HGET', KEYS[1], 'gpaused'), KEYS[1])
  need_type(KEYS[2], 'list')
  local list, at = {}, nil
  for x in string.gmatch(was or '', '%S+') do
    list[#list + 1] = x
    if x == g then at = #list end
  end
  if action == 'pause' then
    if at then return 0 end
    need(#list < 1000, 'at most 1000 lanes are paused at once')
    list[#list + 1] = g
    redis.call('HSET', KEYS[1], 'gpaused', table.concat(list, ' '))
    return 1
  end
  if not at then return 0 end
  table.remove(list, at)
  if #list > 0 then redis.call('HSET', KEYS[1], 'gpaused', table.concat(list, ' ')) else redis.call('HDEL', KEYS[1], 'gpaused') end
  if redis.call('LLEN', KEYS[2]) == 0 then redis.call('LPUSH', KEYS[2], '1') end
  return 1
end
need(#ARGV >= 5, 'set takes 5 or 6 arguments: version, set, rate max, rate ms, groups, window')
local rmax, rms = policy_rate(ARGV[3], ARGV[4])
if not rmax then fail('BAD_ARG', 'rate limit must be 0 0 (none) or 1..1000000 jobs per 1..86400000 ms') end
local sliding = ARGV[6] and need_word(ARGV[6], { fixed = true, sliding = true }, 'the window') == 'sliding'
need(not sliding or rmax > 0, 'a sliding window needs a rate limit')
local groups = ARGV[5]
local cap = false
if groups ~= '' then
  local _, c = policy_groups(groups)
  cap = c
end
local meta = queue_meta(KEYS[1])
need_type(KEYS[2], 'list')
local rate = rmax > 0 and (rmax .. ' ' .. rms .. (sliding and ' sliding' or '')) or nil
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
