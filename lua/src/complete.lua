-- Completes one or many active jobs, each fenced by the token its claim minted: a holder whose
-- lease expired (the job was reaped or re-claimed) is refused and changes nothing. A completed
-- job is kept in the bounded `done` set, or deleted (row and data) at once when the retention is
-- 0. The done set is then trimmed towards the retention, oldest first, in steps: a call trims
-- only once the set holds more than retention + slack (slack = floor(retention / 10)), and then
-- back to the retention, at most (the jobs this call added to it) + 100 + slack rows per call;
-- so a steady stream pays the trim's commands once per ~slack completions instead of on every
-- call, and lowering the retention (even to 0) drains older rows over the next completions at a
-- bounded cost.
-- A completed job whose row names a parent (`parent` = "<queue> <id>", a flow child) writes its
-- hand-off `d:<id>` = "d <queue> <parent id> <id> done <result>" to this queue's outbox in the
-- same step (docs/flows.md); the outbox keys are then required.
-- Group caps: once meta `gcap` is set (by a claim given a group policy with a cap), a call that
-- completes a job whose row has a `group` pushes a marker on `emq:{q}:wake` (derived from
-- KEYS[1], same slot) when it is empty: its group may be claimable again, without polling.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: allow-oom: it moves work forward and frees memory (a job leaves `active`; done rows are
-- trimmed to the retention): a consumer must be able to finish its jobs at the memory limit.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key done emq:{q}:done zset id -> finished at (ms), the bounded retention of done rows
-- @key data emq:{q}:data hash id -> payload
-- @key rows emq:{q}:job: prefix of job rows (for rows trimmed out of the retention)
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key row* emq:{q}:job:<id> the row of job i, for i = 1..n (KEYS[6+i])
-- @key outbox? emq:{q}:outbox (KEYS[7+n], with outdue; required when a job names a parent)
-- @key outdue? emq:{q}:outdue (KEYS[8+n]) the outbox's due times
-- @arg version version the protocol version
-- @arg retention 0..1000000 how many done rows to keep
-- @arg n 1..1000 the number of jobs (a larger decimal count is EMQ_BATCH_TOO_LARGE)
-- @arg id* id:job per job i (ARGV[4+3(i-1)]): its id
-- @arg token* token per job i (ARGV[5+3(i-1)]): the fencing token of its claim (decimal digits)
-- @arg result* json per job i (ARGV[6+3(i-1)]): its result (JSON text, "" for none)
-- @arg self-lease? 1..86400000 (ARGV[4+3n], only with the outbox keys) a self-relay lease in ms.
--   The caller relays the hand-offs this call writes itself: they are written already taken
--   (due at now + lease, as outbox-take would leave them), no outbox signal is sent, and the
--   reply carries them. A caller that crashes before acknowledging them leaves them to any live
--   relay once the lease lapses (the repair rule, docs/flows.md).
-- @returns an array of n integers: 1 = completed, 0 = refused (stale token, not active, or the
--   same id earlier in this call). A call that completes nothing writes nothing. With a
--   self-relay lease, the n integers are followed by the hand-offs written, as bulk strings
--   { entry id, entry text, ... } (none when no completed job names a parent).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key
--   that is not the one the key grammar spells for the queue of KEYS[1], a row key that is not
--   the row of its id, a job naming a parent without the outbox keys), EMQ_WRONGTYPE (a key
--   holds another type), EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE. Every check comes before the first write.
-- @flags allow-oom
-- @uses args keys types meta ids events outbox refs
need(#KEYS >= 6 and #ARGV >= 3, 'expected at least 6 keys and 3 arguments')
local b = queue_base(KEYS[1])
need_keys(KEYS, b, { 'meta', 'active', 'done', 'data', 'job:', 'events' })
-- Fast path (the valid call): one pattern over both joined by a space, at most 16 digits each,
-- coercion by `+ 0`, the ranges: exactly what int() accepts; a miss falls back to int() per
-- argument for the message (as claim does).
local keep, n
if #ARGV[2] < 17 and #ARGV[3] < 17 and string.find(ARGV[2] .. ' ' .. ARGV[3], '^%d+ %d+$') then keep, n = ARGV[2] + 0, ARGV[3] + 0 end
if not (keep and keep <= 1000000 and n >= 1 and n <= 1000000000) then
  keep, n = int(ARGV[2], 0, 1000000), int(ARGV[3], 1, 1000000000)
  need(keep, 'retention must be 0..1000000')
  need(n, 'bad job count')
end
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 jobs per call') end
if (#KEYS ~= 6 + n and #KEYS ~= 8 + n) or (#ARGV ~= 3 + 3 * n and (#ARGV ~= 4 + 3 * n or #KEYS ~= 8 + n)) then
  fail('BAD_ARG', 'expected ' .. n .. ' rows and ' .. (3 * n) .. ' job arguments (and a self-relay lease only with the outbox keys)')
end
local selfLease = nil
if #ARGV == 4 + 3 * n then selfLease = need_int(ARGV[4 + 3 * n], 1, 86400000, 'self-relay lease (ms)') end
local box, due = outbox_keys(KEYS, 7 + n, b)
for i = 1, n do
  local id = ARGV[4 + 3 * (i - 1)]
  if bad_id(id) then fail('BAD_ID', 'job ' .. i .. ' has a malformed id') end
  if KEYS[6 + i] ~= KEYS[5] .. id then need_row(KEYS[6 + i], KEYS[5], id) end
  if not string.match(ARGV[5 + 3 * (i - 1)], '^%d+$') then fail('BAD_ARG', 'job ' .. i .. ' has a bad token') end
end

-- Reads first: every key this call writes is read (or is the first write) before anything is
-- written, so a key of the wrong type is refused with nothing changed. (A read's reply is
-- checked inline: a refusal costs the call of checked(), a read that succeeds none.)
local meta = queue_meta(KEYS[1])
local elog = meta.elog
-- seen (the ids completed so far, for a batch of two or more) and hand (flow hand-offs) are
-- allocated only when they can be used: each table costs an allocation and GC work.
local out, ids, rows, seen, hand = {}, {}, {}, n > 1 and {}, nil
-- Group caps (meta `gcap`, set by a claim given a cap): completing a job of a group wakes an
-- idle consumer, since its group may be claimable again (docs/protocol.md §5, Group policy).
local gcap, grouped = meta.gcap == '1', false
for i = 1, n do
  local id, token, row = ARGV[4 + 3 * (i - 1)], ARGV[5 + 3 * (i - 1)], KEYS[6 + i]
  local cur = gcap and redis.pcall('HMGET', row, 'status', 'token', 'parent', 'group') or redis.pcall('HMGET', row, 'status', 'token', 'parent')
  if cur.err then checked(cur, row) end
  if (seen and seen[id]) or cur[1] ~= 'active' or cur[2] ~= token then
    out[i] = 0
  else
    if seen then seen[id] = true end
    ids[#ids + 1] = id
    rows[#rows + 1] = i
    out[i] = 1
    if cur[4] then grouped = true end
    -- A flow child: its hand-off to the parent's queue goes through this queue's outbox.
    if cur[3] then
      hand = hand or {}
      hand[#hand + 1] = 'd:' .. id
      hand[#hand + 1] = delivery_text(cur[3], id, 'done', ARGV[6 + 3 * (i - 1)])
    end
  end
end
if #ids == 0 then return out end
if hand then
  need(box, 'a job names a parent: the outbox and outdue keys are required')
  checked(redis.pcall('HLEN', box), box)
  checked(redis.pcall('ZCARD', due), due)
end
local wake, wakeLen = nil, 1
if grouped then
  wake = b .. 'wake'
  wakeLen = checked(redis.pcall('LLEN', wake), wake)
end
local card = redis.pcall('ZCARD', KEYS[3])
if type(card) == 'table' then checked(card, KEYS[3]) end
local added = 0
if keep > 0 then added = #ids end
-- Trim in steps (see the header): the set may run up to `slack` rows beyond the retention, so the
-- ZPOPMIN, DEL and HDEL of a trim (and the data check) run once per ~slack rows, not per call.
local slack = math.floor(keep / 10)
local excess = card + added - keep
if excess <= slack then excess = 0 else excess = math.min(excess, added + 100 + slack) end
if keep == 0 or excess > 0 then checked(redis.pcall('HLEN', KEYS[4]), KEYS[4]) end
if elog > 0 then need_type(KEYS[6], 'stream') end

local now = now_ms()
-- The first write is the type check of `active`: a write refused with WRONGTYPE changes nothing.
local z = redis.pcall('ZREM', KEYS[2], unpack(ids))
if type(z) == 'table' then checked(z, KEYS[2]) end
if keep == 0 then
  local del = {}
  for j = 1, #rows do del[j] = KEYS[6 + rows[j]] end
  redis.call('DEL', unpack(del))
  redis.call('HDEL', KEYS[4], unpack(ids))
  refs_drop(b, ids, meta.refs == '1')
else
  local zdone = {}
  for j = 1, #rows do
    local i = rows[j]
    redis.call('HSET', KEYS[6 + i], 'status', 'done', 'result', ARGV[6 + 3 * (i - 1)], 'finished', now)
    zdone[#zdone + 1] = now
    zdone[#zdone + 1] = ids[j]
  end
  redis.call('ZADD', KEYS[3], unpack(zdone))
end
if excess > 0 then
  local old = redis.call('ZPOPMIN', KEYS[3], excess)
  local oldIds, oldRows = {}, {}
  for i = 1, #old, 2 do
    oldIds[#oldIds + 1] = old[i]
    oldRows[#oldRows + 1] = KEYS[5] .. old[i]
  end
  if #oldIds > 0 then
    redis.call('DEL', unpack(oldRows))
    redis.call('HDEL', KEYS[4], unpack(oldIds))
    refs_drop(b, oldIds, meta.refs == '1')
  end
end
if hand then
  -- Every hand-off in one HSET and one ZADD (hand_off() writes one entry per call).
  local zd = {}
  for j = 1, #hand, 2 do
    zd[#zd + 1] = selfLease and now + selfLease or now
    zd[#zd + 1] = hand[j]
  end
  redis.call('HSET', box, unpack(hand))
  redis.call('ZADD', due, unpack(zd))
  if selfLease then
    for j = 1, #hand do out[n + j] = hand[j] end
  else
    redis.call('SPUBLISH', box, #zd / 2)
  end
end
emit(KEYS[6], elog, 'completed', ids)
if wakeLen == 0 then redis.call('LPUSH', wake, '1') end
return out
