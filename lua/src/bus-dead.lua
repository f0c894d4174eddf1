-- Operator actions on a topic's dead letters (written by dead-letter.lua): `replay` appends each
-- one's payload to the topic's log again as a new event (`XADD <log> * p <payload>`, a new id;
-- every group of the topic receives it, as any publish) and deletes the dead letter; `purge`
-- deletes dead letters. Bounded per call: the given dead letter ids, or the oldest n.
-- Flag allow-oom: purge frees memory and is the operator's tool when the server is out of it;
-- replay moves at most n (1..1000) entries from the dead log to the log, deleting each.
--
-- @key meta emq:{t}:bus:meta topic meta hash (version fence)
-- @key log emq:{t}:bus:log the event log (stream)
-- @key dead emq:{t}:bus:dead the dead-letter log (stream)
-- @arg version version the protocol version
-- @arg action replay|purge what to do
-- @arg n 1..1000 how many dead letters (a decimal integer without leading zeros)
-- @arg id* stream-id optional: exactly n dead-letter stream ids (`<ms>-<seq>`); absent: the oldest n
-- @returns { done, more }: the dead letters replayed (or purged), and 1 when (without ids given)
--   older dead letters than this call's remain. A given id that is not in the dead log is
--   skipped.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, keys of different topics, an unknown action, a
--   malformed stream id), EMQ_WRONGTYPE (meta not a hash, log or dead not a stream). Every check
--   and read comes before the first write.
-- @flags allow-oom
-- @uses args keys types topic-meta
need(#KEYS == 3 and #ARGV >= 3, 'expected 3 keys and at least 3 arguments')
need_keys(KEYS, topic_base(KEYS[1]), { 'meta', 'log', 'dead' })
local action = need_word(ARGV[2], { replay = true, purge = true }, 'the action')
local s = ARGV[3]
need(#s <= 4 and string.match(s, '^[1-9]%d*$') and tonumber(s) <= 1000, 'n must be 1..1000')
local n = tonumber(s)
need(#ARGV == 3 or #ARGV == 3 + n, 'give n dead-letter ids, or none')
for i = 4, #ARGV do
  need(#ARGV[i] <= 41 and string.match(ARGV[i], '^%d+%-%d+$'), 'a dead-letter id must be a stream id <ms>-<seq>')
end
topic_meta(KEYS[1])
need_types({ KEYS[2], 'stream', KEYS[3], 'stream' })
local entries, more = {}, 0
if #ARGV == 3 then
  entries = redis.call('XRANGE', KEYS[3], '-', '+', 'COUNT', n + 1)
  if #entries > n then entries[#entries] = nil; more = 1 end
else
  for i = 4, #ARGV do
    local e = redis.call('XRANGE', KEYS[3], ARGV[i], ARGV[i])
    if #e == 1 then entries[#entries + 1] = e[1] end
  end
end
if #entries == 0 then return { 0, more } end
local ids = {}
for i = 1, #entries do
  ids[i] = entries[i][1]
  if action == 'replay' then
    local f, p = entries[i][2], nil
    for j = 1, #f, 2 do if f[j] == 'p' then p = f[j + 1] end end
    if p then redis.call('XADD', KEYS[2], '*', 'p', p) end
  end
end
redis.call('XDEL', KEYS[3], unpack(ids))
return { #ids, more }
