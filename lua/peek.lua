#!lua flags=no-writes
-- peek.lua: EchoMQ protocol v2. Built from lua/src/peek.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Reads one job atomically (read-only): its row, its payload and, for a job never claimed (no row
-- yet), its status derived from where its id waits and its own options.
-- Flag no-writes: it never writes, so Valkey runs it on a replica and under OOM.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key scheduled emq:{q}:scheduled zset id -> run-at
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> "<max attempts>|<backoff>" (until the first claim)
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @returns a flat array of bulk strings, field/value pairs: the row's fields (§3 of
--   docs/protocol.md), then `payload` when the job's data exists. A job with no row yet gets
--   `status` (`scheduled` when its id is in the scheduled set, else `pending`), `attempts` "0"
--   and, from its own options, `max` / `backoff` (and a delayed job's `prio`), and `x` its
--   extras when it has any (the fourth field of its opts: what its first claim moves to the row). An empty array
--   when no such job exists (never enqueued, or trimmed out of its retention).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing arguments, a wrong key count or a key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[6] not the row of the id),
--   EMQ_WRONGTYPE (a key holds another type), EMQ_BAD_ID.
-- @flags no-writes
-- @uses ids keys types meta
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
need(#KEYS == 6 and #ARGV == 2, 'expected 6 keys and 2 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'scheduled', 'data', 'opts', 'job:' })
queue_meta(KEYS[1])
local id = need_id(ARGV[2])
need_row(KEYS[6], KEYS[5], id)

local out = checked(redis.pcall('HGETALL', KEYS[6]), KEYS[6])
local payload = checked(redis.pcall('HGET', KEYS[3], id), KEYS[3])
-- "" marks a ghost (cancel.lua): a job cancelled while pending, whose payload is in its row.
if payload == '' then payload = false end
if #out == 0 then
  if not payload then return {} end
  local at = checked(redis.pcall('ZSCORE', KEYS[2], id), KEYS[2])
  local o = checked(redis.pcall('HGET', KEYS[4], id), KEYS[4])
  out = { 'status', at and 'scheduled' or 'pending', 'attempts', '0' }
  local maxA, backoff = string.match(o or '', '^(%d*)|([^|]*)')
  if maxA and maxA ~= '' then out[#out + 1] = 'max'; out[#out + 1] = maxA end
  if backoff and backoff ~= '' then out[#out + 1] = 'backoff'; out[#out + 1] = backoff end
  local prio = string.match(o or '', '^[^|]*|[^|]*|(%d)$') -- a delayed job's priority
  if prio then out[#out + 1] = 'prio'; out[#out + 1] = prio end
  local x = string.match(o or '', '^[^|]*|[^|]*|[^|]*|(.+)$') -- its extras, the fourth field
  if x then out[#out + 1] = 'x'; out[#out + 1] = x end
end
if payload then
  out[#out + 1] = 'payload'
  out[#out + 1] = payload
end
return out
end
return run(main)
