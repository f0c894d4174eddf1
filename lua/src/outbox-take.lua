-- Takes up to n due entries of a queue's outbox for one relay (docs/flows.md): each taken
-- entry's due time moves to now + lease (server clock), so no other relay takes it while the
-- lease runs; an entry whose relay crashed becomes due again when its lease lapses and is taken
-- by any live relay (the repair rule). Taking does not remove: only outbox-ack.lua does, after
-- the relay's target script has run. An id left in `outdue` without its text (deleted by hand) is
-- dropped.
-- Flag allow-oom: it only rescores entries already in `outdue` (ZADD XX) and drops orphans, so it
-- cannot grow memory, and relaying the outbox is how a full queue's hand-offs drain.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key outbox emq:{q}:outbox hash entry id -> entry text
-- @key outdue emq:{q}:outdue zset entry id -> due at (ms)
-- @arg version version the protocol version
-- @arg n 1..1000 the most entries to take
-- @arg lease 1..86400000 relay lease in ms
-- @returns a flat array of bulk strings { entry id, entry text, ... }, oldest due first.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the
--   key grammar spells for the queue of KEYS[1], a number out of range), EMQ_WRONGTYPE. Every
--   check comes before the first write.
-- @flags allow-oom
-- @uses args keys meta clock
need(#KEYS == 3 and #ARGV == 3, 'expected 3 keys and 3 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'outbox', 'outdue' })
local n = need_int(ARGV[2], 1, 1000, 'entry count')
local lease = need_int(ARGV[3], 1, 86400000, 'relay lease (ms)')
queue_meta(KEYS[1])
local now = now_ms()
local due = checked(redis.pcall('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, n), KEYS[3])
if #due == 0 then return {} end
local texts = checked(redis.pcall('HMGET', KEYS[2], unpack(due)), KEYS[2])
local out, lapse, gone = {}, {}, {}
for i = 1, #due do
  if texts[i] then
    out[#out + 1] = due[i]
    out[#out + 1] = texts[i]
    lapse[#lapse + 1] = now + lease
    lapse[#lapse + 1] = due[i]
  else
    gone[#gone + 1] = due[i]
  end
end
if #lapse > 0 then redis.call('ZADD', KEYS[3], 'XX', unpack(lapse)) end
if #gone > 0 then redis.call('ZREM', KEYS[3], unpack(gone)) end
return out
