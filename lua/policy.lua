#!lua flags=allow-oom
-- policy.lua: EchoMQ protocol v2. Built from lua/src/policy.lua and lua/lib/ by `npm run lua:build`; do not edit.
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
-- The protocol version this build speaks: every script is called with it as ARGV[1] and refuses
-- any other first (run.lua), before it looks at a count, a key or an argument.
local PROTOCOL = '2'
-- The versions of queue data (meta `v`) these scripts read; a queue whose data is of another
-- version is refused, so a runtime of one version never half-applies a transition to another's.
-- v2 reads v1's data unchanged (the layout did not change; docs/wire-changelog.md).
local DATA_VERSIONS = { ['1'] = true, ['2'] = true }
-- Refusals. A script refuses by raising `EMQ_<CODE> <message>` (error level 0: no position in
-- the text); run() answers it as the error reply. A script that must write before its last check
-- (claim's pop-as-read) sets `on_refusal`, which run() calls before it answers the refusal.
local refusal_hook = nil
local function fail(code, msg) error('EMQ_' .. code .. ' ' .. msg, 0) end
-- Refuses with EMQ_BAD_ARG unless ok (a count, a shape, a mode that does not hold).
local function need(ok, msg) if not ok then fail('BAD_ARG', msg) end end
-- Refuses data of another protocol version than these scripts read (meta `v`, when present).
local function need_data_version(v, key)
  if v and not DATA_VERSIONS[v] then fail('VERSION', key .. ' holds protocol ' .. v .. ' data, script speaks ' .. PROTOCOL) end
end
-- A decimal integer in [lo, hi], or nil: an optional `-`, at most 16 digits; refuses NaN, inf,
-- fractions, exponents, `+`, hex and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- One of a set of words, given as a table word -> true.
local function need_word(s, words, what)
  if not words[s] then
    local list = {}
    for w in pairs(words) do list[#list + 1] = w end
    table.sort(list)
    fail('BAD_ARG', what .. ' must be one of ' .. table.concat(list, ', '))
  end
  return s
end
-- The key grammar (docs/protocol.md §2): every key a script is given must be the one the grammar
-- spells. A queue's keys share the base `emq:{<q>}:` (q a name: 1..100 of `A-Za-z0-9_.-`), read
-- from its meta key, KEYS[1]; keys a script reaches without declaring them are spelt from it too.
local function queue_base(meta)
  if type(meta) ~= 'string' or #meta > 110 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<queue>}:meta of a queue')
  end
  return string.sub(meta, 1, -5)
end
-- Checks keys[i] = base .. names[i] for i = from..#names (names[1] is the meta key's `meta`).
local function need_keys(keys, base, names, from)
  for i = from or 2, #names do
    if keys[i] ~= base .. names[i] then
      fail('BAD_ARG', 'KEYS must be the keys ' .. table.concat(names, ', ') .. ' of one queue, in this order (KEYS[' .. i .. '] is not)')
    end
  end
end
-- Key types: a key that holds another type than the protocol gives it is EMQ_WRONGTYPE, found
-- before the first write (Valkey does not roll a script back).
local function need_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then fail('WRONGTYPE', key .. ' is a ' .. t .. ', not a ' .. want) end
end
-- The reply of a command run through redis.pcall: WRONGTYPE becomes EMQ_WRONGTYPE naming the key,
-- any other error reply is raised as it is (OOM, NOPERM keep their codes); a reply passes.
local function checked(r, key)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) == 'WRONGTYPE' then fail('WRONGTYPE', key .. ' holds a value of another type than the protocol gives it') end
    error(r.err, 0)
  end
  return r
end
-- A queue's meta hash (docs/protocol.md §2), read once per call with every field a transition
-- uses (parts of a composed script share the read: no part writes a field another part reads),
-- and its data version checked. Fields: v, elog, token, lanes, xtra, paused, gcap, keepc, rate (the queue's
-- stored rate limit "<max> <ms>"), gpol (its stored group policy), gpaused (its paused lanes; all
-- three written by policy.lua), stamp (claims record attempt starts, claim.lua), refs (the queue uses business ids, refs.lua).
local meta_memo = nil
local function queue_meta(key)
  if not meta_memo then
    local m = checked(redis.pcall('HMGET', key, 'v', 'elog', 'token', 'lanes', 'xtra', 'paused', 'gcap', 'keepc', 'rate', 'gpol', 'gpaused', 'stamp', 'refs'), key)
    need_data_version(m[1], key)
    meta_memo = { v = m[1], elog = tonumber(m[2]) or 0, token = m[3], lanes = m[4], xtra = m[5], paused = m[6], gcap = m[7], keepc = m[8], rate = m[9], gpol = m[10], gpaused = m[11], stamp = m[12], refs = m[13] }
  end
  return meta_memo
end
-- A queue's policy as policy.lua validates it and claim reads it (docs/protocol.md §5, "Rate
-- limits" and "Group policy"): one parser for both, so the stored text is exactly what a claim
-- enforces.
-- policy_rate(max, ms): a rate limit of max jobs (1..1000000) per ms (1..86400000), or 0, 0 for
-- none; answers max, ms, or nil when the pair is out of range (or only one of them is 0).
local function policy_rate(max, ms)
  local m, w = int(max, 0, 1000000), int(ms, 0, 86400000)
  if not m or not w or (m == 0) ~= (w == 0) then return nil end
  return m, w
end
-- policy_groups(spec): the group policy as pol[group] (or pol['*']) = { cap, weight, rate max,
-- rate ms, sliding }, and whether any entry has a cap. Space-separated entries
-- `<who>=<cap>,<weight>,<rate max>,<rate ms>[,sliding]`, who `*` (every group; required) or
-- `g:<group>` (one group; at most 1000 entries, 65536 bytes): at most cap jobs of a group active
-- at once (0 = no cap; 1..100000), weight jobs per turn of the rotation (1..1000), at most rate
-- max jobs per rate ms window (0,0 = none; 1..1000000 per 1..86400000), a fixed window unless
-- the entry ends `,sliding` (a sliding one: at most rate max in any rate ms; only with a rate).
-- EMQ_BAD_ARG otherwise.
local function policy_groups(spec)
  local pol, polCap, cnt = {}, false, 0
  need(#spec <= 65536, 'group policy is at most 65536 bytes')
  for tok in string.gmatch(spec, '%S+') do
    cnt = cnt + 1
    local who, c, w, r, ms, win = string.match(tok, '^([^=]+)=([^,]*),([^,]*),([^,]*),([^,]*)(.*)$')
    c, w, r, ms = int(c, 0, 100000), int(w, 1, 1000), int(r, 0, 1000000), int(ms, 0, 86400000)
    local g = who and (who == '*' and '*' or string.match(who, '^g:([A-Za-z0-9_.-]+)$'))
    if cnt > 1001 or not g or #g > 100 or not c or not w or not r or not ms or (r == 0) ~= (ms == 0) or pol[g]
      or (win ~= '' and (win ~= ',sliding' or r == 0)) then
      fail('BAD_ARG', 'group policy entry ' .. cnt .. ' must be <*|g:group>=<cap 0..100000>,<weight 1..1000>,<rate max 0..1000000>,<rate ms 0..86400000>[,sliding] (rate 0,0 = none; sliding only with a rate; each group once)')
    end
    pol[g] = { c, w, r, ms, win == ',sliding' }
    if c > 0 then polCap = true end
  end
  need(pol['*'], 'group policy needs the entry *=<cap>,<weight>,<rate max>,<rate ms>')
  return pol, polCap
end
-- The runner every built script ends with (`return run(main)`): the version is checked before
-- anything else, so a caller of another version always hears EMQ_VERSION naming both versions;
-- then the script's body runs, and a refusal it raised (or a command's error) is its reply.
local function version_error(v)
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. PROTOCOL .. ', caller speaks ' .. string.sub(tostring(v), 1, 32))
end
-- A call's outcome as an error reply: the hook (if any) first, so a refusal still writes nothing.
local function refusal(r)
  if refusal_hook then local undo = refusal_hook; refusal_hook = nil; undo() end
  return redis.error_reply(type(r) == 'table' and tostring(r.err) or tostring(r))
end
local function run(main)
  if ARGV[1] ~= PROTOCOL then return version_error(ARGV[1]) end
  local ok, r = pcall(main, KEYS, ARGV)
  if ok then return r end
  return refusal(r)
end
local function main(KEYS, ARGV)
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
end
return run(main)
