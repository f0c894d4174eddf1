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
