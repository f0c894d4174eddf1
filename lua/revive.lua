#!lua flags=allow-oom
-- revive.lua: EchoMQ protocol v2. Built from lua/src/revive.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Retries dead jobs by hand: each leaves the morgue with a fresh set of attempts (row `attempts`
-- = 0, `finished` removed, its last `error` kept) and becomes due now in `scheduled` (status
-- `scheduled`), so the next claim promotes it into its lane as it promotes any retry (its
-- priority or group kept). One wake marker is pushed when `wake` is empty. Bounded per call: one
-- id, or the oldest `limit` dead jobs.
-- Flag allow-oom: it moves jobs already held (their rows and ids) from the morgue to `scheduled`,
-- adding nothing but one wake marker, so it cannot grow memory without bound.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key dead emq:{q}:dead zset id -> buried at (the morgue)
-- @key scheduled emq:{q}:scheduled zset id -> run-at (ms)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key job emq:{q}:job: prefix of job rows
-- @key row? emq:{q}:job:<id> (mode `id` only) the job's row
-- @arg version version the protocol version
-- @arg mode id|all one job, or the oldest dead jobs
-- @arg target text mode `id`: the job id; mode `all`: the most jobs to retry (decimal integer
--   1..1000), oldest buried first
-- @mode id KEYS meta, dead, scheduled, wake, job:, the row; ARGV version, `id`, the job id
-- @mode all KEYS meta, dead, scheduled, wake, job:; ARGV version, `all`, the limit
-- @returns { retried, more }: mode `id`: {1, 0} retried / {0, 0} the job exists but is not dead /
--   {-1, 0} no such job; mode `all`: the count retried and 1 when dead jobs remain.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (an unknown mode, counts, a key that is not the one the key
--   grammar spells for the queue of KEYS[1], KEYS[6] not the row of the id, a limit out of
--   range), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check and read comes before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta clock limit
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
-- Time is the server's: the epoch ms of this call, read once (Valkey gives a script call one
-- time, so a second TIME would answer the same; parts of a composed script share the read).
local clock_memo = nil
local function now_ms()
  if not clock_memo then
    local t = redis.call('TIME')
    clock_memo = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_memo
end
-- The 14-byte gate (docs/protocol.md §1): a 3-letter namespace, 11 base62 digits, the body at
-- most 2^64-1 (`LygHa16AHYF`). Compared byte by byte: Lua's `>` on strings follows the server's
-- collation locale, not byte order.
local ID_MAX = 'LygHa16AHYF'
local ID_PATTERN = { job = '^job[0-9A-Za-z]+$', evt = '^evt[0-9A-Za-z]+$', ver = '^ver[0-9A-Za-z]+$' }
local function bad_id(id, ns)
  if type(id) ~= 'string' or #id ~= 14 or not string.match(id, ID_PATTERN[ns or 'job']) then return true end
  local first = string.byte(id, 4)
  if first ~= 76 then return first > 76 end -- 'L', the first digit of the bound: most ids differ there
  for i = 2, 11 do
    local x, y = string.byte(id, i + 3), string.byte(ID_MAX, i)
    if x ~= y then return x > y end
  end
  return false
end
-- An id of namespace ns (default `job`), or EMQ_BAD_ID.
local function need_id(id, ns)
  if bad_id(id, ns) then fail('BAD_ID', 'malformed ' .. (ns or 'job') .. ' id') end
  return id
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
-- A declared row key must be the row (`<prefix><id>`) of its own id.
local function need_row(key, prefix, id)
  if key ~= prefix .. id then fail('BAD_ARG', 'the row key ' .. tostring(key) .. ' is not the row of ' .. id) end
end
-- The bound of an operator's bulk call (drain, revive all): 1..1000 in canonical decimal (no
-- sign, no leading zero, at most 4 digits), or EMQ_BAD_ARG.
local function need_limit(s)
  if type(s) ~= 'string' or #s > 4 or not string.match(s, '^[1-9]%d*$') or tonumber(s) > 1000 then
    fail('BAD_ARG', 'limit must be 1..1000')
  end
  return tonumber(s)
end
-- Key types: a key that holds another type than the protocol gives it is EMQ_WRONGTYPE, found
-- before the first write (Valkey does not roll a script back).
local function need_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then fail('WRONGTYPE', key .. ' is a ' .. t .. ', not a ' .. want) end
end
-- Several at once: a flat list key, type, key, type, …
local function need_types(list)
  for i = 1, #list, 2 do need_type(list[i], list[i + 1]) end
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
local mode = need_word(ARGV[2], { id = true, all = true }, 'the mode')
need(#ARGV == 3 and #KEYS == (mode == 'id' and 6 or 5), 'expected 3 arguments, and 6 keys (mode id) or 5 (mode all)')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'dead', 'scheduled', 'wake', 'job:' })
local n
if mode == 'id' then
  need_row(KEYS[6], KEYS[5], need_id(ARGV[3]))
else
  n = need_limit(ARGV[3])
end
queue_meta(KEYS[1])
need_types({ KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'list' })
local ids, more = nil, 0
if mode == 'id' then
  local rt = redis.call('TYPE', KEYS[6])['ok']
  if rt ~= 'none' and rt ~= 'hash' then fail('WRONGTYPE', KEYS[6] .. ' is a ' .. rt .. ', not a hash') end
  if not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
    return { rt == 'hash' and 0 or -1, 0 }
  end
  ids = { ARGV[3] }
else
  ids = redis.call('ZRANGE', KEYS[2], 0, n)
  if #ids > n then ids[#ids] = nil; more = 1 end
  for i = 1, #ids do need_type(KEYS[5] .. ids[i], 'hash') end
end
if #ids == 0 then return { 0, more } end
local now = now_ms()
redis.call('ZREM', KEYS[2], unpack(ids))
local z = {}
for i = 1, #ids do
  local row = KEYS[5] .. ids[i]
  redis.call('HSET', row, 'status', 'scheduled', 'attempts', '0')
  redis.call('HDEL', row, 'finished')
  z[2 * i - 1] = now
  z[2 * i] = ids[i]
end
redis.call('ZADD', KEYS[3], unpack(z))
if redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
return { #ids, more }
end
return run(main)
