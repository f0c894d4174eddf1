-- progress.lua: EchoMQ protocol v2. Built from lua/src/progress.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- A running handler's checkpoint, progress or log line, fenced by its claim token: a holder whose
-- lease was lost (reaped, re-claimed, finished) is refused and writes nothing. Each lands in the
-- job's row, so it lives and goes with the row: `ckpt` (the checkpoint: JSON text the next attempt
-- starts with), `progress` (JSON text) and `log` (a JSON array of the newest lines, at most the
-- given count). Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: none. It grows a row (a checkpoint of up to 512 MiB), so it must be refused under OOM;
-- without a shebang a legacy script is refused there at its first write, which is that HSET.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key rows emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @arg token token the fencing token (decimal digits)
-- @arg what c|p|l "c" checkpoint, "p" progress, "l" log line
-- @arg value text for "c" JSON text of 1..ARGV[6] bytes; for "p" JSON text of 1..4096 bytes; for
--   "l" a line of 1..4096 bytes
-- @arg limit limit for "c": the largest checkpoint in bytes (1..536870912); for "l": the most
--   lines kept (1..1000, the oldest go first); for "p": ignored (any decimal integer)
-- @returns 1 written; 0 refused (the row is not `active` under this token: stale holder).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[3] not the row of the id, a value
--   out of its bounds), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes before the first write.
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
-- A fencing token: decimal digits, at most 20.
local function need_token(s)
  if type(s) ~= 'string' or #s > 20 or not string.match(s, '^%d+$') then fail('BAD_ARG', 'bad token') end
  return s
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
need(#KEYS == 3 and #ARGV == 6, 'expected 3 keys and 6 arguments')
local id, token, what, value = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'job:' })
need_id(id)
need_row(KEYS[3], KEYS[2], id)
need_token(token)
need_word(what, { c = true, p = true, l = true }, 'what')
local limit
if what == 'c' then
  limit = need_int(ARGV[6], 1, 536870912, 'the checkpoint limit')
elseif what == 'l' then
  limit = need_int(ARGV[6], 1, 1000, 'the log line count')
else
  need(string.match(ARGV[6], '^%d+$') and int(ARGV[6], 0, 9007199254740991), 'ARGV[6] must be a decimal integer')
end
local max = what == 'c' and limit or 4096
need(#value > 0 and #value <= max, 'the value must be 1..' .. max .. ' bytes, got ' .. #value)
queue_meta(KEYS[1])
local row = KEYS[3]
local cur = checked(redis.pcall('HMGET', row, 'status', 'token', 'log'), row)
if cur[1] ~= 'active' or cur[2] ~= token then return 0 end
if what == 'c' then
  redis.call('HSET', row, 'ckpt', value)
elseif what == 'p' then
  redis.call('HSET', row, 'progress', value)
else
  -- A log written by another runtime that is not a JSON array starts over.
  local ok, lines = pcall(cjson.decode, cur[3] or '[]')
  if not ok or type(lines) ~= 'table' then lines = {} end
  lines[#lines + 1] = value
  local drop = #lines - limit
  if drop > 0 then
    local kept = {}
    for i = drop + 1, #lines do kept[#kept + 1] = lines[i] end
    lines = kept
  end
  redis.call('HSET', row, 'log', cjson.encode(lines))
end
return 1
end
return run(main)
