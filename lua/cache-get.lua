#!lua flags=no-writes
-- cache-get.lua: EchoMQ protocol v2. Built from lua/src/cache-get.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- Reads 1..N cache entries atomically (read-only): each one's fields and its remaining life on
-- the server clock, in one command. A call of N > 1 entries touches N hash tags: it is legal only
-- where every key is on one node (a standalone Valkey); a cluster client reads one entry per call.
-- Flag no-writes: it never writes, so it runs under OOM and on a replica.
--
-- @key entry* emq:{c:<ns>:<key>}:entry entry i's hash (KEYS[2i-1])
-- @key lease* emq:{c:<ns>:<key>}:lease entry i's fill lease (KEYS[2i], the same cache key)
-- @arg version version the protocol version
-- @arg lease-flags text one lease flag per entry, in order ("1" = also report whether entry i's
--   fill lease is held, "0" = not): a string of N characters, each 0 or 1
-- @returns N groups of 7, flat: { v, d, n, x, g, pttl, leased, v, d, … } (absent fields as false;
--   pttl as PTTL reports it; leased 1/0). One entry (N = 1) is exactly one group.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (an odd or zero key count, a wrong argument count, keys that
--   are not the entry and lease keys of one cache key each, lease flags that are not N characters
--   of 0/1), EMQ_WRONGTYPE (an entry is not a hash: the whole call fails; a caller that batched
--   reads re-reads them one by one). Writes nothing.
-- @flags no-writes
-- @uses fail types cache-keys
-- The protocol version this build speaks: every script is called with it as ARGV[1] and refuses
-- any other first (run.lua), before it looks at a count, a key or an argument.
local PROTOCOL = '2'
-- Refusals. A script refuses by raising `EMQ_<CODE> <message>` (error level 0: no position in
-- the text); run() answers it as the error reply. A script that must write before its last check
-- (claim's pop-as-read) sets `on_refusal`, which run() calls before it answers the refusal.
local refusal_hook = nil
local function fail(code, msg) error('EMQ_' .. code .. ' ' .. msg, 0) end
-- Refuses with EMQ_BAD_ARG unless ok (a count, a shape, a mode that does not hold).
local function need(ok, msg) if not ok then fail('BAD_ARG', msg) end end
-- The hash tag `c:<ns>:<key>` of an entry (kind `entry`) or lease (`lease`) key, or EMQ_BAD_ARG.
-- One match (the key's class already excludes the braces), on cache-get's hot path.
local ENTRY_KEY = { entry = '^emq:{c:[A-Za-z0-9_.%-]+:[!-z|~]+}:entry$', lease = '^emq:{c:[A-Za-z0-9_.%-]+:[!-z|~]+}:lease$' }
local function need_entry_key(k, kind, i)
  local tag = type(k) == 'string' and string.find(k, ENTRY_KEY[kind]) and string.sub(k, 6, -#kind - 3)
  if tag and #tag > 104 then -- shorter, neither the namespace (100) nor the key (512) can be too long
    local ns = #string.match(tag, '^c:([^:]*)')
    if ns > 100 or #tag - 3 - ns > 512 then tag = nil end
  end
  if not tag then fail('BAD_ARG', 'KEYS[' .. i .. '] must be a cache ' .. kind .. ' key emq:{c:<ns>:<key>}:' .. kind) end
  return tag
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
-- The reply of a command run through redis.pcall: WRONGTYPE becomes EMQ_WRONGTYPE naming the key,
-- any other error reply is raised as it is (OOM, NOPERM keep their codes); a reply passes.
local function checked(r, key)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) == 'WRONGTYPE' then fail('WRONGTYPE', key .. ' holds a value of another type than the protocol gives it') end
    error(r.err, 0)
  end
  return r
end
local function main(KEYS, ARGV)
local n = #KEYS
need(n >= 2 and n % 2 == 0 and #ARGV == 2, 'expected 2 keys per entry and 2 arguments')
for i = 1, n, 2 do
  local tag = need_entry_key(KEYS[i], 'entry', i)
  need(KEYS[i + 1] == 'emq:{' .. tag .. '}:lease', 'KEYS[' .. (i + 1) .. '] must be the lease of the entry KEYS[' .. i .. ']')
end
local flags = ARGV[2]
need(#flags == n / 2 and not string.find(flags, '[^01]'), 'lease flags must be one 0 or 1 per entry')
local out, o = {}, 0
for i = 1, n, 2 do
  local e = KEYS[i]
  local f = checked(redis.pcall('HMGET', e, 'v', 'd', 'n', 'x', 'g'), e)
  local leased = 0
  if string.byte(flags, (i + 1) / 2) == 49 then leased = redis.call('EXISTS', KEYS[i + 1]) end
  out[o + 1] = f[1]
  out[o + 2] = f[2]
  out[o + 3] = f[3]
  out[o + 4] = f[4]
  out[o + 5] = f[5]
  out[o + 6] = redis.call('PTTL', e)
  out[o + 7] = leased
  o = o + 7
end
return out
end
return run(main)
