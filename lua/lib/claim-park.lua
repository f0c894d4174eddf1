-- @requires fail args
-- A parked consumer's claim (claim's KEYS[10..11] `parked`, `inbox:<tag>`, ARGV[5] the
-- registration's ms; docs/protocol.md §5, "Parked consumers"). claim_park checks the
-- registration's inputs and its keys' types before anything is written; claim_park_end, the
-- claim's last write, registers the consumer or ends its registration.
local function claim_park(KEYS, ARGV, b)
  local ib = b .. 'inbox:'
  local tag = string.sub(KEYS[11], #ib + 1)
  if KEYS[10] ~= b .. 'parked' or string.sub(KEYS[11], 1, #ib) ~= ib or #tag == 0 or #tag > 32 or string.find(tag, '[^A-Za-z0-9]') then
    fail('BAD_ARG', 'KEYS[10..11] must be the keys parked, inbox:<tag> (tag 1..32 of A-Za-z0-9) of the queue of KEYS[1]')
  end
  local ttl = need_int(ARGV[5], 1, 86400000, 'the registration ms')
  local kind = redis.call('TYPE', KEYS[10])['ok']
  if kind ~= 'none' and kind ~= 'zset' then fail('WRONGTYPE', KEYS[10] .. ' is a ' .. kind .. ', not a zset') end
  local waiting = redis.pcall('LLEN', KEYS[11])
  if type(waiting) ~= 'number' then fail('WRONGTYPE', KEYS[11] .. ' is not a list') end
  return { ttl = ttl, member = ARGV[3] .. ':' .. tag, kind = kind, waiting = waiting }
end
-- The parked consumer registers while it has a slot left (it claimed fewer than it asked for)
-- and no lease waits in its inbox (so an enqueue leases it at most one job, within its slots).
-- Else an earlier registration ends, and an empty inbox gets an empty entry (PX the
-- registration's ms), so that the consumer's BLPOP returns at once by its inbox: a chain
-- wake-up marker this call pushed stays on `wake` for the other consumers.
local function claim_park_end(park, KEYS, slot, now)
  if slot and park.waiting == 0 then
    if park.kind == 'zset' then redis.call('ZREMRANGEBYSCORE', KEYS[10], '-inf', '(' .. now) end
    redis.call('ZADD', KEYS[10], now + park.ttl, park.member)
  else
    if park.kind == 'zset' then redis.call('ZREM', KEYS[10], park.member) end
    if park.waiting == 0 then
      redis.call('RPUSH', KEYS[11], '')
      redis.call('PEXPIRE', KEYS[11], park.ttl)
    end
  end
end
