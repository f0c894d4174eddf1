-- Registers an idle consumer as parked (docs/protocol.md §5, "Parked consumers"): until the
-- registration runs out, enqueue.lua may lease one plain job straight to it, pushing the lease
-- text to `inbox:<tag>` (the list the consumer blocks on, with `wake`) instead of `pending`. A
-- registration is used up by the lease it receives; the consumer removes it (ZREM) when it wakes
-- for any other reason. Registrations that ran out are dropped here.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: allow-oom: a registration replaces the consumer's earlier one (one member per consumer)
-- and drops the ones that ran out, so it cannot grow memory without bound; a parked consumer
-- must still be able to register while the server is at its memory limit.
--
-- @key meta emq:{q}:meta queue meta hash (protocol version `v`)
-- @key parked emq:{q}:parked zset "<lease ms>:<tag>" -> registration end (epoch ms, server clock)
-- @arg version version the protocol version
-- @arg lease 1..86400000 the lease in ms a job enqueue leases to it gets
-- @arg tag bytes:1..32 the consumer's tag (1..32 of A-Z a-z 0-9): its inbox is `emq:{q}:inbox:<tag>`
-- @arg ttl 1..86400000 how long the registration holds, in ms
-- @returns 1.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the
--   key grammar spells for the queue of KEYS[1], a malformed argument), EMQ_WRONGTYPE. Every
--   check comes before the first write.
-- @flags allow-oom
-- @uses keys types meta args clock
need(#KEYS == 2 and #ARGV == 4, 'expected 2 keys and 4 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'parked' })
local lease = int(ARGV[2], 1, 86400000)
local ttl = int(ARGV[4], 1, 86400000)
need(lease and ttl, 'the lease and the registration ms must be integers in 1..86400000')
local tag = ARGV[3]
need(#tag > 0 and #tag <= 32 and not string.find(tag, '[^A-Za-z0-9]'), 'the tag must be 1..32 of A-Z a-z 0-9')
queue_meta(KEYS[1])
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'none' and kind ~= 'zset' then fail('WRONGTYPE', KEYS[2] .. ' is a ' .. kind .. ', not a zset') end
local now = now_ms()
if kind == 'zset' then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. now) end
redis.call('ZADD', KEYS[2], now + ttl, lease .. ':' .. tag)
return 1
