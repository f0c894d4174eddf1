-- claim.lua: EchoMQ protocol v1. Promotes due scheduled jobs to pending, then claims up to n
-- pending jobs for one consumer: each gets a lease on the server clock, a fencing token minted
-- from the queue's monotonic counter, and one more counted attempt. The first claim of a job
-- creates its row (and moves its own options, if any, into it).
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (`v` version, `token` fencing counter)
-- KEYS[2]  emq:{q}:pending    list of pending ids
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at (ms)
-- KEYS[4]  emq:{q}:active     zset id -> lease deadline (ms)
-- KEYS[5]  emq:{q}:wake       list that idle consumers block on
-- KEYS[6]  emq:{q}:data       hash id -> payload
-- KEYS[7]  emq:{q}:opts       hash id -> "<max attempts>|<backoff>" (until the first claim)
-- KEYS[8]  emq:{q}:job:       prefix of job rows (a row is this prefix followed by the id)
-- KEYS[9]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  n, the most jobs to claim (0..1000; 0 only promotes)
-- ARGV[3]  lease in ms (1..86400000)
-- ARGV[4]  the most scheduled jobs to promote in this call (0..10000)
-- Returns: { wait, id_1, token_1, attempt_1, payload_1, ..., id_k, token_k, attempt_k, payload_k }
--          where wait is -1 when jobs remain pending, else the ms until the next scheduled job
--          is due (-2 when none is scheduled).
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local meta = redis.call('HMGET', KEYS[1], 'v', 'elog')
local stored, elog = meta[1], tonumber(meta[2]) or 0
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
-- Lifecycle events: one sharded pub/sub message per call and kind on the events channel, and,
-- when the queue's `elog` (set by enqueue) is above 0, one entry in the bounded events stream.
local function emit(key, elog, kind, ids, now)
  if #ids == 0 then return end
  -- Ids and kinds are validated base62 / fixed words: plain concatenation is valid JSON.
  redis.call('SPUBLISH', key, '{"e":"' .. kind .. '","ids":["' .. table.concat(ids, '","') .. '"],"at":' .. now .. '}')
  if elog > 0 then
    redis.call('XADD', key, 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', table.concat(ids, ' '), 'at', now)
  end
end
local n, lease, promote = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not n or n < 0 or n > 1000 or n % 1 ~= 0 then return redis.error_reply('EMQ_BAD_ARG claim count must be 0..1000') end
if not lease or lease < 1 or lease > 86400000 then return redis.error_reply('EMQ_BAD_ARG lease must be 1..86400000 ms') end
if not promote or promote < 0 or promote > 10000 then return redis.error_reply('EMQ_BAD_ARG promote limit must be 0..10000') end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix = KEYS[8]

if promote > 0 then
  local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, promote)
  if #due > 0 then
    redis.call('ZREM', KEYS[3], unpack(due))
    for i = 1, #due do
      local row = prefix .. due[i]
      -- A retried job has a row; a delayed job gets one at its first claim.
      if redis.call('EXISTS', row) == 1 then redis.call('HSET', row, 'status', 'pending') end
      redis.call('LPUSH', KEYS[2], due[i])
    end
  end
end

local out = { -1 }
if n > 0 then
  local ids = redis.call('RPOP', KEYS[2], n)
  if ids then
    local last = redis.call('HINCRBY', KEYS[1], 'token', #ids)
    local hasOpts = redis.call('EXISTS', KEYS[7]) == 1 -- most queues never set per-job options
    local deadline = now + lease
    local zargs = {}
    for i = 1, #ids do
      local id = ids[i]
      local row = prefix .. id
      local payload = redis.call('HGET', KEYS[6], id)
      if payload then -- data deleted by hand: the id is dropped, no row is half-created
        local token = last - #ids + i
        local att = redis.call('HINCRBY', row, 'attempts', 1)
        if att == 1 and hasOpts then
          local o = redis.call('HGET', KEYS[7], id)
          if o then
            local maxA, backoff = string.match(o, '^(%d*)|(.*)$')
            if maxA ~= '' then redis.call('HSET', row, 'max', maxA) end
            if backoff ~= '' then redis.call('HSET', row, 'backoff', backoff) end
            redis.call('HDEL', KEYS[7], id)
          end
        end
        redis.call('HSET', row, 'status', 'active', 'token', token)
        zargs[#zargs + 1] = deadline
        zargs[#zargs + 1] = id
        local k = #out
        out[k + 1] = id
        out[k + 2] = token
        out[k + 3] = att
        out[k + 4] = payload
      end
    end
    if #zargs > 0 then
      redis.call('ZADD', KEYS[4], unpack(zargs))
      local claimed = {}
      for i = 2, #zargs, 2 do claimed[#claimed + 1] = zargs[i] end
      emit(KEYS[9], elog, 'claimed', claimed, now)
    end
  end
end

if redis.call('LLEN', KEYS[2]) > 0 then
  -- More work remains: make sure another idle consumer wakes up (chain wake-up).
  if #out > 1 and redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
else
  local nxt = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if nxt[2] then out[1] = math.max(0, tonumber(nxt[2]) - now) else out[1] = -2 end
end
return out
