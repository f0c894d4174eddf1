-- announce.lua: EchoMQ protocol v2. Built from lua/src/announce.lua and lua/lib/ by `npm run lua:build`; do not edit.
-- The registry of known queues, topics and cache namespaces: a process announces a name as it
-- starts using it (a producer at its first enqueue or publish, a consumer as it starts), so
-- operators list them without a SCAN of the keyspace. Each registry is a zset of names, all at
-- score 0, so it pages in name order (ZRANGE BYLEX). The registries are cluster-wide keys: KEYS[1]
-- must be exactly one of the three, never another key of the `{emq}:` reserve.
-- No flag: an `add` grows a registry (one member per name), so the call is refused under OOM at
-- its first write as a legacy script is (a shebang without allow-oom would refuse a `del` too).
--
-- @key registry {emq}:queues|{emq}:topics|{emq}:caches the registry: zset of names, all at score 0
-- @arg version version the protocol version
-- @arg action add|del what to do
-- @arg names* text 1..1000 names, each of the key grammar (`^[A-Za-z0-9_.-]{1,100}$`)
-- @returns the number of names added (or removed) that were not (or were) there.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, another key, an unknown action,
--   no names or more than 1000), EMQ_BAD_NAME, EMQ_WRONGTYPE. Every check comes before the first
--   write.
-- @uses args types
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
-- Key types: a key that holds another type than the protocol gives it is EMQ_WRONGTYPE, found
-- before the first write (Valkey does not roll a script back).
local function need_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then fail('WRONGTYPE', key .. ' is a ' .. t .. ', not a ' .. want) end
end
local function main(KEYS, ARGV)
need(#KEYS == 1 and #ARGV >= 3 and #ARGV <= 1002, 'expected 1 key and 3..1002 arguments')
local k = need_word(KEYS[1], { ['{emq}:queues'] = true, ['{emq}:topics'] = true, ['{emq}:caches'] = true }, 'KEYS[1]')
local add = need_word(ARGV[2], { add = true, del = true }, 'the action') == 'add'
local args = {}
for i = 3, #ARGV do
  local n = ARGV[i]
  if #n < 1 or #n > 100 or not string.match(n, '^[A-Za-z0-9_.-]+$') then
    fail('BAD_NAME', 'a registered name must match ^[A-Za-z0-9_.-]{1,100}$')
  end
  if add then args[#args + 1] = 0 end
  args[#args + 1] = n
end
need_type(k, 'zset')
if add then return redis.call('ZADD', k, unpack(args)) end
return redis.call('ZREM', k, unpack(args))
end
return run(main)
