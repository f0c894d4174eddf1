-- Moves one pending entry of a consumer group to the topic's dead-letter log and acknowledges it,
-- atomically: either both happen or neither. Used when the entry's delivery count reached the
-- group's limit. Only an entry still pending in the group and idle for at least `min idle` ms is
-- moved (a live member that keeps its entry fresh keeps it, and two members racing on one entry
-- write one dead letter). An entry that is pending but no longer in the log (trimmed or deleted)
-- is acknowledged and reported lost; nothing is appended.
-- Flag allow-oom: it moves work forward (the entry leaves the group's pending list) and its one
-- append is capped (`XADD MAXLEN ~ cap`), so a group can still shed a poison entry under OOM.
--
-- @key meta emq:{t}:bus:meta topic meta hash (version fence)
-- @key log emq:{t}:bus:log the event log (stream) the group lives on
-- @key dead emq:{t}:bus:dead the dead-letter log (stream)
-- @arg version version the protocol version
-- @arg group name group name (key grammar)
-- @arg consumer name consumer name of the caller (key grammar)
-- @arg stream-id stream-id stream id of the entry, `<ms>-<seq>`
-- @arg evt id:evt branded event id of the entry (`evt` + 11 base62 digits), recorded as `id`
-- @arg error bytes:0..65536 error text ("" is recorded as "delivery limit exceeded")
-- @arg min-idle 0..86400000 min idle ms: refuse if the entry was touched more recently
-- @arg cap 1..1000000 dead-letter cap, applied with XADD MAXLEN ~
-- @returns {status, deliveries}: status 1 = dead-lettered and acked, 2 = entry gone from the log
--   (acked, nothing appended: the caller reports it lost), 0 = not pending in the group or not
--   idle long enough (nothing written). deliveries = the server's delivery count.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, keys of different topics),
--   EMQ_BAD_NAME, EMQ_BAD_ID, EMQ_WRONGTYPE (meta not a hash, log or dead not a stream),
--   EMQ_NOT_FOUND (NOGROUP: the log or the group does not exist). Every check precedes the first
--   write.
-- @flags allow-oom
-- @uses args ids keys types clock topic-meta
need(#KEYS == 3 and #ARGV == 8, 'expected 3 keys and 8 arguments')
need_keys(KEYS, topic_base(KEYS[1]), { 'meta', 'log', 'dead' })
topic_meta(KEYS[1])
local function badName(s)
  return #s < 1 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
end
local group, consumer, sid, evt, err = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
if badName(group) then fail('BAD_NAME', 'bad group name') end
if badName(consumer) then fail('BAD_NAME', 'bad consumer name') end
need(#sid <= 41 and string.match(sid, '^%d+%-%d+$'), 'bad stream id')
need_id(evt, 'evt')
need(#err <= 65536, 'error text is over 65536 bytes')
local minIdle = need_int(ARGV[7], 0, 86400000, 'min idle')
local cap = need_int(ARGV[8], 1, 1000000, 'dead-letter cap')
need_type(KEYS[3], 'stream')

-- Reads only from here on; a missing log or group (NOGROUP) is refused before any write.
local pel = redis.pcall('XPENDING', KEYS[2], group, sid, sid, 1)
if type(pel) == 'table' and pel.err and string.sub(pel.err, 1, 9) ~= 'WRONGTYPE' then
  if string.find(pel.err, 'NOGROUP', 1, true) then fail('NOT_FOUND', 'NOGROUP no log or no group ' .. group .. ' on it') end
  fail('BAD_ARG', pel.err)
end
pel = checked(pel, KEYS[2])
if #pel == 0 then return {0, 0} end
local deliveries = tonumber(pel[1][4])
if tonumber(pel[1][3]) < minIdle then return {0, deliveries} end
local entry = redis.call('XRANGE', KEYS[2], sid, sid)
if #entry == 0 then
  redis.call('XACK', KEYS[2], group, sid)
  return {2, deliveries}
end
local fields, payload = entry[1][2], ''
for i = 1, #fields, 2 do
  if fields[i] == 'p' then payload = fields[i + 1] end
end
if err == '' then err = 'delivery limit exceeded' end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', cap, '*', 'id', evt, 'group', group, 'consumer', consumer,
  'deliveries', deliveries, 'error', err, 'p', payload, 'at', now_ms())
redis.call('XACK', KEYS[2], group, sid)
return {1, deliveries}
