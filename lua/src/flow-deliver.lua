-- Delivers one finished child's outcome to its parent, on the parent's queue (docs/flows.md), or
-- a batch of them (to parents of this queue), applied in order as if one call each. Idempotent:
-- the outcome is recorded once in the parent's row (field `r:<child>` = "<outcome> <text>", set
-- only when absent); a repeat changes nothing. While the parent is `waiting`: a child done (or
-- failed or cancelled under the policy `ignore` or `continue`) lowers `deps`, and the last one
-- moves the parent to `pending` exactly once (event `released`); a child failed or cancelled
-- under the policy `release` lowers `deps` and moves the parent to `pending` at once, whatever
-- `deps` is left (its siblings still out run on; their outcomes arrive after it stopped waiting). A child failed or cancelled
-- under the policy `fail` buries the parent (status `dead`, error "child <id> <outcome>: <text>")
-- and writes, in this queue's outbox, one cancel entry (`x:<id>`) per sibling whose outcome has
-- not arrived and, when the parent has a parent of its own, the report of its failure
-- (`d:<parent id>`). An outcome that arrives after the parent stopped waiting is recorded only.
-- The outcome `removed` (never an entry's: a direct call, removeChildDependency) does not record
-- an outcome: the parent forgets the child (`k:<child>` removed, `deps` lowered while it waits,
-- the last one releasing it); answers -1 / 0 (the child's outcome already arrived) / 1 / 2.
-- The outcome `resume` (never an entry's: a direct call, retryChild) makes a root parent buried
-- by this child's failure wait for it again (see resume below); answers 4, -2 or -1.
-- Recording an outcome also drops the child's creation entry (`c:<child id>`) from this queue's
-- outbox if it is still there. Lanes mode (meta `lanes`, docs/protocol.md §5 Fair lanes):
-- `pending` joins the ring `emq:{q}:groups` (spelt from the base) when a push makes it non-empty.
-- Flag allow-oom: it moves flows forward (a parent released or buried, its siblings cancelled),
-- writing at most one outcome per child, bounded by the parent's children; refusing it under OOM
-- would leave parents waiting forever on outcomes already relayed.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key pending emq:{q}:pending list of pending ids
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key dead emq:{q}:dead zset id -> buried at (the morgue)
-- @key data emq:{q}:data hash id -> payload (for jobs trimmed out of the morgue)
-- @key job emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the first delivery's parent row
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key outbox emq:{q}:outbox hash entry id -> entry text (also the relay's channel)
-- @key outdue emq:{q}:outdue zset entry id -> due at (ms)
-- @arg version version the protocol version
-- @arg parent id:job the parent id
-- @arg child id:job the child id
-- @arg outcome done|failed|cancelled|removed|resume how the child ended (removed: the parent stops waiting for it; resume: waits for it again)
-- @arg text bytes:0..536870912 the child's result (JSON text, "" for none) or error text
-- @arg cap 1..1000000 morgue cap
-- @arg more* text (optional) delivery i >= 2 (at most 1000 in all), ARGV[7+4(i-2) .. 10+4(i-2)]:
--   parent id, child id, outcome, text as ARGV[2..5]; its parent's row is KEYS[6] .. parent id
--   (the same slot by the key grammar)
-- @returns -1 no such parent, or the child is not one of its children; 0 already delivered
--   (nothing written); 1 recorded (the parent waits for more, or no longer waits); 2 recorded and
--   the parent released to `pending`; 3 recorded and the parent buried; `resume` only: 4 resumed,
--   -2 buried by this child but not resumable. With more than one
--   delivery, an array of those integers, one per delivery (events: one `released` and one
--   `buried` message per call, naming every parent concerned).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for
--   the queue of KEYS[1], KEYS[7] not the row of the first parent, a bad outcome, a text too
--   long, a cap out of range), EMQ_BAD_ID, EMQ_WRONGTYPE, EMQ_BATCH_TOO_LARGE. Every check comes
--   before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta clock events outbox morgue flow-parent
need(#KEYS == 10 and #ARGV >= 6 and (#ARGV - 6) % 4 == 0, 'expected 10 keys and 6 arguments (and 4 more per further delivery)')
if #ARGV > 6 + 4 * 999 then fail('BATCH_TOO_LARGE', 'at most 1000 deliveries per call') end
local b = queue_base(KEYS[1])
-- KEYS[7], the first parent's row, is checked against its id below (need_row).
local names = { 'meta', 'pending', 'wake', 'dead', 'data', 'job:', 'job:<id>', 'events', 'outbox', 'outdue' }
local fixed = { unpack(KEYS) }
fixed[7] = b .. names[7]
need_keys(fixed, b, names)
local meta = queue_meta(KEYS[1])
local elog, lanes = meta.elog, meta.lanes == '1'
-- The ring is type-checked here, before any write.
if lanes then need_type(b .. 'groups', 'list') end
-- Deliveries: the first is ARGV[2..5], each further one 4 arguments after the morgue cap.
local cap = need_int(ARGV[6], 1, 1000000, 'morgue cap')
local D = {}
for i = 1, 1 + (#ARGV - 6) / 4 do
  local a = i == 1 and 1 or 6 + 4 * (i - 2)
  local d = { pid = ARGV[a + 1], cid = ARGV[a + 2], outcome = ARGV[a + 3], text = ARGV[a + 4] }
  if bad_id(d.pid) or bad_id(d.cid) then fail('BAD_ID', 'delivery ' .. i .. ': malformed parent or child id') end
  need(d.outcome == 'done' or d.outcome == 'failed' or d.outcome == 'cancelled' or d.outcome == 'removed' or d.outcome == 'resume', 'delivery ' .. i .. ': outcome must be done, failed, cancelled, removed or resume')
  need(#d.text <= 536870912, 'delivery ' .. i .. ': result or error text over 536870912 bytes')
  D[i] = d
end
need_row(KEYS[7], KEYS[6], D[1].pid)

-- Reads: every parent row is a hash (or absent), and, when any delivery would write, every key
-- a write may touch is of its type.
local writes = false
for i = 1, #D do
  local row = KEYS[6] .. D[i].pid
  local cur = checked(redis.pcall('HMGET', row, 'status', 'k:' .. D[i].cid, 'r:' .. D[i].cid), row)
  if cur[1] and cur[2] and (not cur[3] or D[i].outcome == 'resume') then writes = true end
end
if writes then
  need_types({ KEYS[2], 'list', KEYS[3], 'list', KEYS[4], 'zset', KEYS[5], 'hash', KEYS[9], 'hash', KEYS[10], 'zset' })
  if elog > 0 then need_type(KEYS[8], 'stream') end
end

local now = writes and now_ms() or 0
local released, buried, boxed = {}, {}, 0
local function box(id, entry)
  hand_off(KEYS[9], KEYS[10], id, entry, now)
  boxed = boxed + 1
end
-- The waiting parent becomes `pending` (once: the caller saw it `waiting`).
local function release(row, pid)
  redis.call('HSET', row, 'status', 'pending')
  redis.call('HINCRBY', KEYS[1], 'waits', -1) -- meta `waits`: one waiting job fewer (flow-add.lua)
  if redis.call('LPUSH', KEYS[2], pid) == 1 and lanes then redis.call('LPUSH', b .. 'groups', '') end
  if redis.call('LLEN', KEYS[3]) == 0 then redis.call('LPUSH', KEYS[3], '1') end
  released[#released + 1] = pid
  return 2
end
-- Outcome `removed` (removeChildDependency): the parent stops waiting for the child: its
-- `k:<child>` and the child's creation entry go, `deps` drops while it waits (0 releases it).
-- The child itself is untouched; its own outcome, if it ever comes, answers -1.
local function detach(row, pid, cid, status)
  redis.call('HDEL', row, 'k:' .. cid)
  redis.call('HDEL', KEYS[9], 'c:' .. cid)
  redis.call('ZREM', KEYS[10], 'c:' .. cid)
  if status ~= 'waiting' then return 1 end
  if redis.call('HINCRBY', row, 'deps', -1) > 0 then return 1 end
  return release(row, pid)
end
-- Outcome `resume` (retrying a flow's failed child): the parent, buried by this child's failure
-- (`dead`, error "child <child> …", the child's outcome `failed` or `cancelled`), a root (no
-- parent of its own) whose other children all ended `done`, waits again for this child alone:
-- out of the morgue, `waiting`, `deps` 1, the child's outcome and the error removed. Answers 4;
-- -2 when it was buried by this child but cannot resume (a sibling did not end done, or it has a
-- parent); -1 otherwise (not buried by this child).
local function resume(row, pid, cid)
  local cur = redis.call('HMGET', row, 'status', 'error', 'parent', 'r:' .. cid)
  local why = 'child ' .. cid .. ' '
  if cur[1] ~= 'dead' or not cur[2] or string.sub(cur[2], 1, #why) ~= why or not cur[4] or string.match(cur[4], '^done ') then return -1 end
  if cur[3] then return -2 end
  local all = redis.call('HGETALL', row)
  local done = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r:' and string.match(all[i + 1], '^done ') then done[string.sub(all[i], 3)] = true end
  end
  for i = 1, #all, 2 do
    local k = string.sub(all[i], 3)
    if string.sub(all[i], 1, 2) == 'k:' and k ~= cid and not done[k] then return -2 end
  end
  redis.call('ZREM', KEYS[4], pid)
  redis.call('HDEL', row, 'r:' .. cid, 'error', 'finished')
  redis.call('HSET', row, 'status', 'waiting', 'deps', 1)
  redis.call('HINCRBY', KEYS[1], 'waits', 1)
  return 4
end
-- One delivery, in order (a later one sees what an earlier one of this call wrote).
local function deliver(d)
  local pid, cid, outcome, text = d.pid, d.cid, d.outcome, d.text
  local row = KEYS[6] .. pid
  local cur = redis.call('HMGET', row, 'status', 'deps', 'parent', 'k:' .. cid, 'r:' .. cid)
  if not cur[1] or not cur[4] then return -1 end
  if outcome == 'resume' then return resume(row, pid, cid) end
  if cur[5] then return 0 end
  if outcome == 'removed' then return detach(row, pid, cid, cur[1]) end
  local pol = string.match(cur[4], '^[^ ]+ ([a-z]+) ')
  local fails = outcome ~= 'done' and pol == 'fail'
  -- `release`: a failed or cancelled child releases its waiting parent at once, siblings still out.
  local early = outcome ~= 'done' and pol == 'release'
  redis.call('HSET', row, 'r:' .. cid, outcome .. ' ' .. text)
  -- An outcome proves the child was created: its creation entry, if still in this outbox (the
  -- relay that created the child died before acknowledging), is dropped, so that no late replay
  -- creates the child again after it finished and left (keepDone 0).
  redis.call('HDEL', KEYS[9], 'c:' .. cid)
  redis.call('ZREM', KEYS[10], 'c:' .. cid)
  if cur[1] ~= 'waiting' then return 1 end
  if not fails then
    local left = redis.call('HINCRBY', row, 'deps', -1)
    if left > 0 and not early then return 1 end
    return release(row, pid)
  end
  -- Fail the parent: bury it, cancel the siblings still out, report to its own parent.
  local err = 'child ' .. cid .. ' ' .. outcome .. ': ' .. text
  bury(row, KEYS[4], pid, err, now)
  redis.call('HINCRBY', KEYS[1], 'waits', -1)
  each_child_out(row, function(sid, queue) box('x:' .. sid, 'x ' .. queue .. ' ' .. sid) end)
  if cur[3] then box('d:' .. pid, delivery_text(cur[3], pid, 'failed', err)) end
  trim_morgue(KEYS[4], KEYS[5], KEYS[6], cap, meta.refs == '1')
  buried[#buried + 1] = pid
  return 3
end
local out = {}
for i = 1, #D do out[i] = deliver(D[i]) end
if boxed > 0 then redis.call('SPUBLISH', KEYS[9], boxed) end
emit(KEYS[8], elog, 'released', released)
emit(KEYS[8], elog, 'buried', buried)
if #D == 1 then return out[1] end
return out
