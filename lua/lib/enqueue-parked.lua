-- @requires anchor
-- enqueue.lua's lease to a parked consumer (docs/protocol.md §5, "Parked consumers"): one plain
-- job, ready now, on a queue with nothing pending, no lanes and no pause, is leased here to the
-- consumer of the zset `parked` whose current registration ends last, as its claim would lease
-- it, and its lease text goes to that consumer's `inbox:<tag>`, which it blocks on: the job
-- skips `pending` and the consumer's claim call. Anything unusual (a key of another type, a row
-- the id already has, a malformed registration) is left to the claim path: no lease, no error.

-- The registration to lease job `id` to, or nil: reads only, every one through pcall.
local function parked_target(b, pending, id, now)
  local parked = b .. 'parked'
  local reg = redis.pcall('ZRANGE', parked, '+inf', now, 'BYSCORE', 'REV', 'LIMIT', 0, 1)
  local lease, tag = nil, nil
  if not reg.err and reg[1] then lease, tag = string.match(reg[1], '^(%d+):([0-9A-Za-z]+)$') end
  lease = lease and #lease < 9 and tonumber(lease)
  if not (lease and lease >= 1 and lease <= 86400000 and #tag <= 32) then return nil end
  local inbox, row = b .. 'inbox:' .. tag, b .. 'job:' .. id
  -- `pending` and the inbox empty and no row: none of the three exists (Valkey keeps no empty
  -- list, and a key of another type exists); `active` a zset or absent (ZCARD refuses another type).
  if redis.pcall('EXISTS', pending, inbox, row) == 0 and type(redis.pcall('ZCARD', b .. 'active')) == 'number' then
    return { member = reg[1], parked = parked, lease = lease, inbox = inbox, row = row }
  end
  return nil
end
-- The lease, as claim.lua writes a first claim's: `active` (with the anchor), a fenced token
-- from meta `token`, the row; the registration is used up; "<id> <token> <payload>" goes to the
-- inbox (the id is 14 bytes and the token digits, so the payload starts after the second space).
-- With `stamp` (meta `stamp` = 1: attempt starts recorded), the row's `started` too.
local function parked_lease(meta, b, hand, id, payload, now, stamp)
  redis.call('ZADD', b .. 'active', 'inf', ANCHOR, now + hand.lease, id)
  local token = redis.call('HINCRBY', meta, 'token', 1)
  if stamp then redis.call('HSET', hand.row, 'status', 'active', 'token', token, 'attempts', 1, 'started', now)
  else redis.call('HSET', hand.row, 'status', 'active', 'token', token, 'attempts', 1) end
  redis.call('ZREM', hand.parked, hand.member)
  redis.call('RPUSH', hand.inbox, id .. ' ' .. token .. ' ' .. payload)
  redis.call('PEXPIRE', hand.inbox, hand.lease)
end
