-- Pauses or resumes a queue fleet-wide. A paused queue's meta holds `paused` = 1; claim.lua reads
-- it in the meta read it already makes and, while it is set, claims and promotes nothing and
-- answers { -2 }: every consumer blocks on `wake` from its next claim on. Resume removes the field
-- and pushes one wake marker (when `wake` is empty), so an idle consumer claims at once and the
-- chain wake-up reaches the others.
--
-- @key meta emq:{q}:meta queue meta hash (`paused`)
-- @key wake emq:{q}:wake list that idle consumers block on
-- @arg version version the protocol version
-- @arg action pause|resume what to do
-- @returns 1 changed / 0 the queue already was in that state (nothing written).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the
--   key grammar spells for the queue of KEYS[1], an unknown action), EMQ_WRONGTYPE. Every check
--   comes before the first write.
-- @flags allow-oom
-- @uses args keys types meta
need(#KEYS == 2 and #ARGV == 2, 'expected 2 keys and 2 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'wake' })
local action = need_word(ARGV[2], { pause = true, resume = true }, 'the action')
local paused = queue_meta(KEYS[1]).paused == '1'
need_type(KEYS[2], 'list')
if action == 'pause' then
  if paused then return 0 end
  redis.call('HSET', KEYS[1], 'paused', '1')
  return 1
end
if not paused then return 0 end
redis.call('HDEL', KEYS[1], 'paused')
if redis.call('LLEN', KEYS[2]) == 0 then redis.call('LPUSH', KEYS[2], '1') end
return 1
