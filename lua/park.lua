#!lua flags=allow-oom
-- park.lua: EchoMQ protocol v2. Built from lua/src/park.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Registers an idle consumer as parked (docs/protocol.md §5, "Parked consumers"): until the
-- registration runs out, enqueue.lua may lease one plain job straight to it, pushing the lease
-- text to `inbox:<tag>` (the list the consumer blocks on, with `wake`) instead of `pending`. A
-- registration is used up by the lease it receives; the consumer removes it (ZREM) when it wakes
-- for any other reason. Registrations that ran out are dropped here.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: allow-oom: a registration replaces the consumer's earlier one (one member per consumer)
-- and drops the ones that ran out, so it cannot grow memory without bound; a parked consumer
-- must still be able to register while the server is at its memory limit.
--
-- @key meta emq:{q}:meta queue meta hash (protocol version `v`)
-- @key parked emq:{q}:parked zset "<lease ms>:<tag>" -> registration end (epoch ms, server clock)
-- @arg version version the protocol version
-- @arg lease 1..86400000 the lease in ms a job enqueue leases to it gets
-- @arg tag bytes:1..32 the consumer's tag (1..32 of A-Z a-z 0-9): its inbox is `emq:{q}:inbox:<tag>`
-- @arg ttl 1..86400000 how long the registration holds, in ms
-- @returns 1.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the
--   key grammar spells for the queue of KEYS[1], a malformed argument), EMQ_WRONGTYPE. Every
--   check comes before the first write.
-- @flags allow-oom
-- @uses keys types meta args clock
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
need(#KEYS == 2 and #ARGV == 4, 'expected 2 keys and 4 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'parked' })
local lease = int(ARGV[2], 1, 86400000)
local ttl = int(ARGV[4], 1, 86400000)
need(lease and ttl, 'the lease and the registration ms must be integers in 1..86400000')
local tag = ARGV[3]
need(#tag > 0 and #tag <= 32 and not string.find(tag, '[^A-Za-z0-9]'), 'the tag must be 1..32 of A-Z a-z 0-9')
queue_meta(KEYS[1])
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'none' and kind ~= 'zset' then fail('WRONGTYPE', KEYS[2] .. ' is a ' .. kind .. ', not a zset') end
local now = now_ms()
if kind == 'zset' then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. now) end
redis.call('ZADD', KEYS[2], now + ttl, lease .. ':' .. tag)
return 1
end
return run(main)
