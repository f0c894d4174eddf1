-- Records a queue's lifecycle-log length (meta `elog`, docs/protocol.md §5a) without an enqueue:
-- the runtime calls it when it starts, for every queue it knows with a log configured, so that a
-- queue no process enqueues to (fed only by schedules or flows) logs its transitions too. Every
-- transition script reads `elog` in its meta read and, when it is above 0, appends one entry per
-- call and kind to the stream `events` (XADD MAXLEN ~ elog). An enqueue still records its own
-- caller's length (its ARGV[4]), as before.
-- No script flags: it writes one meta field, and the log it turns on grows the stream.
--
-- @key meta emq:{q}:meta queue meta hash (`elog`)
-- @key events emq:{q}:events lifecycle events: the bounded stream (type-checked when the length is above 0)
-- @arg version version the protocol version
-- @arg length 0..1000000 the log length (0: transitions are only signalled)
-- @returns 1 written / 0 meta already held that length (an absent `elog` counts as 0; nothing written).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a bad length, a key that is not the one the key
--   grammar spells for the queue of KEYS[1]), EMQ_WRONGTYPE (meta not a hash, events not a
--   stream). Every check comes before the write.
-- @uses args keys types meta
need(#KEYS == 2 and #ARGV == 2, 'expected 2 keys and 2 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'events' })
local len = need_int(ARGV[2], 0, 1000000, 'the log length')
local m = queue_meta(KEYS[1])
if len > 0 then need_type(KEYS[2], 'stream') end
if m.elog == len then return 0 end
redis.call('HSET', KEYS[1], 'elog', len)
return 1
