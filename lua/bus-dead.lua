-- bus-dead.lua: EchoMQ protocol v1. Operator actions on a topic's dead letters (written by
-- dead-letter.lua): `replay` appends each one's payload to the topic's log again as a new event
-- (`XADD <log> * p <payload>`, a new id; every group of the topic receives it, as any publish)
-- and deletes the dead letter; `purge` deletes dead letters. Bounded per call: the given dead
-- letter ids, or the oldest n.
--
-- KEYS[1]  emq:{t}:bus:meta  topic meta hash (version fence)
-- KEYS[2]  emq:{t}:bus:log   the event log (stream)
-- KEYS[3]  emq:{t}:bus:dead  the dead-letter log (stream)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  `replay` or `purge`
-- ARGV[3]  n (decimal integer 1..1000)
-- ARGV[4 .. 3+n]  optional: exactly n dead-letter stream ids (`<ms>-<seq>`); absent: the oldest n
-- Returns: { done, more }: the dead letters replayed (or purged), and 1 when (without ids given)
--          older dead letters than this call's remain. A given id that is not in the dead log is
--          skipped.
-- Errors:  EMQ_BAD_ARG (counts, keys of different topics, an unknown action, a malformed stream
--          id), EMQ_VERSION, EMQ_WRONGTYPE (meta not a hash, log or dead not a stream). Every
--          check and read comes before the first write.
local V = '1'
if #KEYS ~= 3 or #ARGV < 3 then return redis.error_reply('EMQ_BAD_ARG expected 3 keys and at least 3 arguments') end
local base = string.match(KEYS[1], '^(emq:{[A-Za-z0-9_.-]+}:bus:)meta$')
if not base or KEYS[2] ~= base .. 'log' or KEYS[3] ~= base .. 'dead' then
  return redis.error_reply('EMQ_BAD_ARG keys must be the meta, log and dead keys of one topic')
end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local action = ARGV[2]
if action ~= 'replay' and action ~= 'purge' then return redis.error_reply('EMQ_BAD_ARG the action must be replay or purge') end
local s = ARGV[3]
if type(s) ~= 'string' or #s > 4 or not string.match(s, '^[1-9]%d*$') or tonumber(s) > 1000 then
  return redis.error_reply('EMQ_BAD_ARG n must be 1..1000')
end
local n = tonumber(s)
if #ARGV ~= 3 and #ARGV ~= 3 + n then return redis.error_reply('EMQ_BAD_ARG give n dead-letter ids, or none') end
for i = 4, #ARGV do
  if #ARGV[i] > 41 or not string.match(ARGV[i], '^%d+%-%d+$') then
    return redis.error_reply('EMQ_BAD_ARG a dead-letter id must be a stream id <ms>-<seq>')
  end
end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE the topic meta key is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION topic data is protocol ' .. meta .. ', script speaks ' .. V)
end
for i = 2, 3 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' and t ~= 'stream' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[i] .. ' is a ' .. t .. ', not a stream') end
end
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
