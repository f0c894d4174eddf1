-- Removes relayed entries from a queue's outbox (docs/flows.md): a relay acknowledges an entry
-- only after its target script ran, so an entry is removed once its effect exists. Acknowledging
-- an entry that is gone (another relay took it after a lapsed lease and acknowledged first)
-- changes nothing.
-- Flag allow-oom: it only deletes, and it is what frees the outbox after a relay.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key outbox emq:{q}:outbox hash entry id -> entry text
-- @key outdue emq:{q}:outdue zset entry id -> due at (ms)
-- @arg version version the protocol version
-- @arg n 1..1000 the number of entries (above 1000: EMQ_BATCH_TOO_LARGE)
-- @arg entries* text n entry ids: "<c|d|x>:<job id>"
-- @returns the number of entries removed (integer).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the
--   key grammar spells for the queue of KEYS[1], a malformed entry id), EMQ_BAD_ID, EMQ_WRONGTYPE,
--   EMQ_BATCH_TOO_LARGE. Every check comes before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta
need(#KEYS == 3 and #ARGV >= 2, 'expected 3 keys and at least 2 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'outbox', 'outdue' })
local n = need_int(ARGV[2], 1, 1000000000, 'entry count')
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 entries per call') end
need(#ARGV == 2 + n, 'expected ' .. n .. ' entry ids')
local ids = {}
for i = 1, n do
  local id = ARGV[2 + i]
  local kind, job = string.match(id, '^([cdx]):(.*)$')
  need(kind, 'entry ' .. i .. ' is not "<c|d|x>:<job id>"')
  if bad_id(job) then fail('BAD_ID', 'entry ' .. i .. ' names a malformed job id') end
  ids[i] = id
end
queue_meta(KEYS[1])
need_type(KEYS[3], 'zset')
-- The first write is the type check of `outbox`: a write refused with WRONGTYPE changes nothing.
local r = checked(redis.pcall('HDEL', KEYS[2], unpack(ids)), KEYS[2])
redis.call('ZREM', KEYS[3], unpack(ids))
return r
