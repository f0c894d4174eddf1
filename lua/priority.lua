#!lua flags=allow-oom
-- priority.lua: EchoMQ protocol v2. Built from lua/src/priority.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Changes the priority of a job that waits (pending or scheduled; docs/protocol.md §5,
-- Priorities). A pending job leaves the list of its level (one LREM: O(length of that list), an
-- operator's call, not a hot path) and joins the back of its new level's line (the LPUSH end,
-- as an enqueue at that level would put it: FIFO within a level is the order of arrival in it);
-- a scheduled job keeps its run-at and carries its new level (its row's `prio` when it has a row,
-- else the third field of its opts), which its promotion reads. The first level >= 1 a queue
-- gets turns lanes mode on as enqueue does (meta `lanes` = 1, and `""` joins the ring `groups`
-- when `pending` holds ids). A ready job without a row is found by LPOS in `pending` and in the
-- level lists `levels` names; one found in neither waits in a fair lane.
-- Refused, nothing written: a job that does not wait (active, done, dead, cancelled, a `waiting`
-- flow parent) and a job in a fair lane (a group: priority and lane are exclusive).
-- Flag allow-oom: it moves an id or rewrites one field, so it cannot grow memory without bound.
--
-- @key meta emq:{q}:meta queue meta hash (`lanes`)
-- @key pending emq:{q}:pending list of level-0 pending ids; `<pending>:<p>` (level p), `levels`
--   and the ring `groups` are spelt from the queue's base (same slot)
-- @key scheduled emq:{q}:scheduled zset id -> run-at (ms)
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> "<max>|<backoff>|<lane>|<extras>" (until the first claim)
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @arg priority 0..9 the new priority (higher claimed first)
-- @returns 1 changed / 0 it already had that priority (nothing written) / -1 no such job / -2 it
--   does not wait (active, done, dead, cancelled or a waiting flow parent) / -3 it is in a fair
--   lane (integers; nothing written but by 1).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a bad priority, a key that is not the one the key
--   grammar spells for the queue of KEYS[1], KEYS[7] not the row of the id), EMQ_BAD_ID,
--   EMQ_WRONGTYPE. Every check and read comes before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta
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
-- The argument reader: each takes the argument, its range and its name, and answers the value or
-- refuses with EMQ_BAD_ARG naming the argument and what it must be.
local function need_int(s, lo, hi, what)
  local v = int(s, lo, hi)
  if not v then fail('BAD_ARG', what .. ' must be a decimal integer in ' .. lo .. '..' .. hi) end
  return v
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
need(#KEYS == 7 and #ARGV == 3, 'expected 7 keys and 3 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'pending', 'scheduled', 'data', 'opts', 'job:' })
local id, row = need_id(ARGV[2]), KEYS[7]
need_row(row, KEYS[6], id)
local to = need_int(ARGV[3], 0, 9, 'the priority')
local m = queue_meta(KEYS[1])
local pending, scheduled, data, opts = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local levels, ring = b .. 'levels', b .. 'groups'
local cur = checked(redis.pcall('HMGET', row, 'status', 'prio', 'group'), row)
local status, from = cur[1], nil
need_types({ pending, 'list', scheduled, 'zset', data, 'hash', opts, 'hash', levels, 'zset', ring, 'list' })
local o = redis.call('HGET', opts, id)
-- The opts fields: max, backoff, lane, then "|<extras>" or "" (extras may hold '|').
local oMax, oBack, oRest = string.match(o or '', '^([^|]*)|([^|]*)(.*)$')
local oLane, oX = string.match(oRest or '', '^|([^|]*)(.*)$')
if status then
  if status ~= 'pending' and status ~= 'scheduled' then return -2 end
  if cur[3] then return -3 end
  from = tonumber(cur[2]) or 0
elseif redis.call('ZSCORE', scheduled, id) then
  status = 'scheduled'
  if oLane and string.match(oLane, '^g:') then return -3 end
  from = tonumber(oLane) or 0
else
  local p = redis.call('HGET', data, id)
  if not p or p == '' then return -1 end -- ("" is a ghost whose row left the retention)
  status = 'pending'
end
-- A pending job's list: the level its row names first, then `pending` and every level listed.
local list = nil
if status == 'pending' then
  local tries, present = {}, redis.call('ZRANGE', levels, 0, -1)
  if from then tries[1] = from end
  tries[#tries + 1] = 0
  for i = 1, #present do tries[#tries + 1] = tonumber(present[i]) end
  for i = 1, #tries do
    local L = tries[i]
    local key = L == 0 and pending or pending .. ':' .. L
    if L and checked(redis.pcall('LPOS', key, id), key) then
      list, from = key, L
      break
    end
  end
  if not list then return from and -2 or -3 end -- rowless and in no level list: a fair lane
end
if from == to then return 0 end
local target = to == 0 and pending or pending .. ':' .. to
if target ~= pending then need_type(target, 'list') end

-- Writes.
local wasLanes = m.lanes == '1'
if list then
  redis.call('LREM', list, 1, id)
  if from > 0 and redis.call('LLEN', list) == 0 then redis.call('ZREM', levels, from) end
  if to > 0 then
    redis.call('LPUSH', target, id)
    redis.call('ZADD', levels, to, to)
  elseif redis.call('LPUSH', pending, id) == 1 and wasLanes then
    redis.call('LPUSH', ring, '')
  end
elseif cur[1] then -- a scheduled job with a row: its promotion reads the row's `prio`
  if to > 0 then redis.call('HSET', row, 'prio', to) else redis.call('HDEL', row, 'prio') end
else -- a scheduled job without a row: the third field of its opts
  local lane = to > 0 and tostring(to) or ''
  local x = oX or ''
  if lane == '' and x == '' and (oMax or '') == '' and (oBack or '') == '' then
    redis.call('HDEL', opts, id)
  else
    redis.call('HSET', opts, id, (oMax or '') .. '|' .. (oBack or '') .. '|' .. lane .. x)
  end
end
if to > 0 and cur[1] and list then
  redis.call('HSET', row, 'prio', to)
elseif to == 0 and cur[1] and list then
  redis.call('HDEL', row, 'prio')
end
-- The first level of the queue: lanes mode on, and the jobs of `pending` join the ring.
if to > 0 and not wasLanes then
  redis.call('HSET', KEYS[1], 'lanes', '1')
  if redis.call('LLEN', pending) > 0 then redis.call('LPUSH', ring, '') end
end
return 1
end
return run(main)
