-- Sets a Bus topic's retention policy (replacing the old one) in the topic's meta hash, where
-- every node's trimmer (trim.lua) reads it. The meta gets `v` when it has none.
-- Flag allow-oom: a bounded write (four policy fields of one hash) that lets an operator set a
-- tighter policy for trim.lua to free memory with; as a legacy script under OOM it would delete
-- the old policy (HDEL is not refused) and then be refused at its HSET, leaving no policy.
--
-- @key meta emq:{t}:bus:meta topic meta hash (`v` version, policy fields)
-- @arg version version the protocol version
-- @arg max-len ""|1..1000000000 maxLen: entries to keep in the live log ("" = no length bound)
-- @arg max-age-ms ""|1..3153600000000 maxAgeMs: age bound of the live log ("" = no age bound)
-- @arg archive-max-age-ms ""|1..3153600000000 archiveMaxAgeMs: age bound of the archive
--   ("" = keep forever)
-- @arg archive-max-bytes? 0..1099511627776|unbounded archiveMaxBytes (optional, additive): byte
--   bound of the archive, 0 = no archive (trimmed entries are deleted), `unbounded` = no byte
--   bound, stored as that word so a runtime can tell an explicit opt-out from a policy that never
--   had the field. Absent (a four-argument call): the stored archiveMaxBytes is left as it is.
-- @returns 1
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a key that is not a topic meta
--   key), EMQ_WRONGTYPE (the meta key is not a hash). Every check precedes the first write.
-- @flags allow-oom
-- @uses args keys types topic-meta
need(#KEYS == 1 and (#ARGV == 4 or #ARGV == 5), 'expected 1 key and 4 or 5 arguments')
topic_base(KEYS[1])
local stored = topic_meta(KEYS[1])[1]
local names = { 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs' }
local limits = { 1000000000, 3153600000000, 3153600000000 }
local set = {}
for i = 1, 3 do
  local v = ARGV[i + 1]
  if v ~= '' then
    set[#set + 1] = names[i]
    set[#set + 1] = string.format('%d', need_int(v, 1, limits[i], names[i]))
  end
end
if #ARGV == 5 then
  local b = ARGV[5]
  if b ~= 'unbounded' then
    b = int(b, 0, 1099511627776)
    if not b then fail('BAD_ARG', 'archiveMaxBytes must be a decimal integer in 0..1099511627776 or unbounded') end
    b = string.format('%d', b)
  end
  set[#set + 1] = 'archiveMaxBytes'
  set[#set + 1] = b
end

redis.call('HDEL', KEYS[1], 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs')
stamp_topic(KEYS[1], stored)
if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
return 1
