-- Creates the nodes of one or many flows that live in ONE queue (docs/flows.md): a node with
-- children is written `waiting` (its row holds `deps`, the number of children not yet finished,
-- and one `k:<child>` field per child), a leaf is written `pending` (its id joins `pending`). A
-- node whose parent is in another queue names it in its row (`parent` = "<queue> <id>"). A child
-- in ANOTHER queue is not created here: its creation is written to this queue's outbox (entry
-- `c:<child id>`), relayed by any live node to that queue with this same script, and
-- acknowledged (outbox-ack.lua). Idempotent per tree: a tree of this call (a node whose parent
-- is not in this call, and its descendants in this call) of which any node's id already holds
-- data is skipped whole, so a replayed relay changes nothing. The nodes and edges are checked by
-- lua/lib/flow-add-args.lua, the fan-out's fence and parent by lua/lib/flow-add-fanout.lua.
--
-- No script flags: a flow-add creates jobs and outbox entries (memory grows), so under OOM it is
-- refused at its first write (a shebang without allow-oom would refuse it at its start instead).
--
-- Arguments after the counts (o = 2 in fan-out mode, else 0): per node i, five arguments
--   ARGV[6+o+5(i-1) .. 10+o+5(i-1)]: id; payload (JSON text, 1..limit bytes); parent ("" = none,
--   "<other queue> <id>" = a parent in another queue, "<this queue> <id>" = a node of this
--   call); max attempts (1..1000 or ""); backoff ("f:<ms>"/"e:<ms>" or ""). Then per edge j,
--   six arguments: parent id (a node of this call, or the running job); child id; child queue
--   (a queue name); failure policy (`fail`, `ignore`, `continue`, `release`); key (1..100 of
--   [A-Za-z0-9_.-], unique among the parent's children); creation entry text ("" when the child
--   queue is this queue and the child a node of this call, else the relay's text
--   "c <child queue> <subtree JSON>", 1..limit bytes). Then, optionally, a self-relay lease in ms
--   (1..86400000): the caller relays the creation entries this call writes itself (it knows
--   them: the entry texts of the edges of the trees created); they are written already taken
--   (due at now + lease, as outbox-take would leave them) and no outbox signal is sent. If the
--   caller dies first, any relay takes them when the lease lapses. Then, optionally (the
--   run-times form: the lease argument is then required, "" for none), one run time per node
--   (n arguments, node order): "" = ready now, "d:<ms>" = a delay (0..315360000000) from now on
--   the server clock, "t:<ms>" = a run-at (epoch ms, 0..7258118400000). Only a leaf may have
--   one; a leaf whose instant is after now is written `scheduled` (its row's status, its id in
--   emq:{q}:scheduled at that instant, spelt from the base of KEYS[1]: same slot; event
--   `scheduled`) instead of `pending`: claim makes it pending when due, as a retried job. A
--   leaf's run time may also be, or hold (space-separated, after its "d:" / "t:"), a lane as
--   enqueue's lanes form takes it: "p:<1..9>" a priority or "g:<lane>" a fair lane; a ready leaf
--   then joins its level or lane list (and the ring), a delayed one keeps it in its opts' third
--   field, and meta `lanes` is set (docs/protocol.md §5).
--
-- @key meta emq:{q}:meta queue meta hash
-- @key pending emq:{q}:pending list of pending ids
-- @key wake emq:{q}:wake list that idle consumers block on
-- @key data emq:{q}:data hash id -> payload
-- @key opts emq:{q}:opts hash id -> "<max attempts>|<backoff>"
-- @key job emq:{q}:job: prefix of job rows
-- @key events emq:{q}:events lifecycle events: sharded channel and bounded stream
-- @key outbox emq:{q}:outbox hash entry id -> entry text (also the channel the relay listens on)
-- @key outdue emq:{q}:outdue zset entry id -> due at (ms): when a relay may take the entry
-- @key active? emq:{q}:active (fan-out mode only) zset id -> lease deadline
-- @key row? emq:{q}:job:<id> (fan-out mode only) the running job's row
-- @arg version version the protocol version
-- @arg limit 1..536870912 largest payload in bytes
-- @arg cap 1..10000000 outbox bound: the most entries the outbox may hold after this call
-- @arg n 0..1000 the number of nodes (1..1000; fan-out mode 0..1000)
-- @arg m 0..1000 the number of child edges (0..1000; fan-out mode 1..1000)
-- @arg jid? id:job (fan-out mode only) the running job's id
-- @arg token? token (fan-out mode only) the running job's fencing token, or "" (attach: a waiting parent)
-- @arg node* node per node: five arguments, see above
-- @arg edge* edge per edge: six arguments, see above
-- @arg lease? 1..86400000 the self-relay lease in ms ("" = none in the run-times form), optional
-- @arg run* run per node (the run-times form, after the lease): "" or tokens "d:<ms>" / "t:<epoch ms>", "p:<1..9>" / "g:<lane>"
-- @mode create 9 keys: creates the nodes and edges of the call.
-- @mode fan-out 11 keys (and the running job's id and token as ARGV[6], ARGV[7]): gives a
--   RUNNING job children (docs/flows.md, "Fanning out from a running job"). Fenced by the job's
--   claim token, the job leaves `active` and becomes a `waiting` parent (its attempt given back,
--   `deps` raised by its new children, one `k:<child>` each; an earlier fan-out's child ids and
--   keys may not repeat); the new children are created as above. A stale holder is refused and
--   changes nothing, so a fan-out is never applied twice. With the token "" (attach, added
--   within v2): the job must be a `waiting` flow parent instead (0 when it is not: nothing
--   written); it stays waiting, `deps` raised by its new children (docs/flows.md, "Attaching
--   children to a waiting parent").
-- @returns an array of n integers: 1 = created, 0 = skipped (its tree already existed). Fan-out
--   mode: 1 = the job now waits for its new children, 0 = refused (not active under that token;
--   nothing written).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, keys that are not this
--   queue's, a node whose parent is in this queue but not in this call, an edge that does not
--   match its child, a cycle, a repeated id), EMQ_WRONGTYPE, EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE,
--   EMQ_BATCH_TOO_LARGE, EMQ_FLOW_TOO_LARGE (the outbox would pass its bound). Every check comes
--   before the first write.
-- @uses args keys types meta clock events enqueue-lanes flow-add-args flow-add-fanout
need((#KEYS == 9 or #KEYS == 11) and #ARGV >= 5, 'expected 9 (or 11) keys and at least 5 arguments')
local X = #KEYS == 11 -- fan-out mode: a running job gets children
local b = queue_base(KEYS[1])
local names = { 'meta', 'pending', 'wake', 'data', 'opts', 'job:', 'events', 'outbox', 'outdue' }
if X then names[10] = 'active' end
need_keys(KEYS, b, names)
local q = string.sub(b, 6, -3)
local maxBytes, cap = int(ARGV[2], 1, 536870912), int(ARGV[3], 1, 10000000)
local n, m = int(ARGV[4], X and 0 or 1, 1000000000), int(ARGV[5], X and 1 or 0, 1000000000)
need(maxBytes and cap and n and m, 'payload limit (1..536870912), outbox bound (1..10000000), node count (>= 1; fan-out >= 0) and edge count (>= 0; fan-out >= 1) must be integers')
if n > 1000 or m > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 nodes and 1000 edges per call') end
local o, jid, token = 0, nil, nil
if X then
  o, jid = 2, ARGV[6]
  if bad_id(jid) then fail('BAD_ID', 'the running job has a malformed id') end
  need_row(KEYS[11], KEYS[6], jid)
  -- Token "": attach mode, the job must be a `waiting` parent (it gets more children).
  token = ARGV[7] == '' and '' or need_token(ARGV[7])
end
local selfLease, runsAt = nil, nil
local last = 5 + o + 5 * n + 6 * m
if #ARGV == last + 1 then
  selfLease = need_int(ARGV[#ARGV], 1, 86400000, 'the self-relay lease (ms)')
elseif n > 0 and #ARGV == last + 1 + n then
  -- The run-times form: the lease ("" = none), then one run time per node.
  if ARGV[last + 1] ~= '' then selfLease = need_int(ARGV[last + 1], 1, 86400000, 'the self-relay lease (ms)') end
  runsAt = last + 1
else
  need(#ARGV == last, 'expected ' .. (5 * n) .. ' node and ' .. (6 * m) .. ' edge arguments (and an optional self-relay lease, then optional run times)')
end
local ids, index, up = flow_nodes(ARGV, n, o, maxBytes, q, jid)
local base = 5 + o + 5 * n
local kids, edgeOf, keys = flow_edges(ARGV, m, base, index, up, q, jid)
local root = flow_roots(n, ids, index, up, edgeOf, jid)
local run, lane = flow_runs(ARGV, n, runsAt, kids, now_ms())
local delayed, laned = next(run) ~= nil, next(lane) ~= nil

-- Reads first: every key this call writes is read before anything is written.
local meta = queue_meta(KEYS[1])
-- Lanes mode (meta `lanes`, docs/protocol.md §5 Fair lanes): `pending` joins the ring `groups`
-- when a push makes it non-empty; the ring is type-checked here, before any write.
local lanes = meta.lanes == '1'
if lanes then need_type(b .. 'groups', 'list') end
local lanesMode = lanes or laned
local elog = meta.elog
local cur = nil
if X then
  cur = fanout_fence(KEYS[11], KEYS[10], token, jid, edgeOf, keys)
  if not cur then return 0 end
end
local skip = {}
if n > 0 then
  local have = checked(redis.pcall('HMGET', KEYS[4], unpack(ids)), KEYS[4])
  for i = 1, n do
    if have[i] and X then fail('BAD_ARG', 'node ' .. i .. ' exists already (' .. ids[i] .. ')') end
    if have[i] then skip[root[i]] = true end
  end
end
local out, entries = { [0] = 1 }, 0
for i = 1, n do out[i] = skip[root[i]] and 0 or 1 end
for j = 1, m do
  local a = base + 6 * (j - 1)
  if out[index[ARGV[a + 1]] or 0] == 1 and ARGV[a + 6] ~= '' then entries = entries + 1 end
end
checked(redis.pcall('LLEN', KEYS[2]), KEYS[2])
checked(redis.pcall('LLEN', KEYS[3]), KEYS[3])
checked(redis.pcall('HLEN', KEYS[5]), KEYS[5])
checked(redis.pcall('ZCARD', KEYS[9]), KEYS[9])
if delayed then checked(redis.pcall('ZCARD', b .. 'scheduled'), b .. 'scheduled') end
if laned then
  -- Every level and lane list a ready leaf may join is type-checked before the first write.
  local lv, gs = {}, {}
  for i = 1, n do
    local ln = not run[i] and lane[i]
    if ln and string.sub(ln, 1, 2) == 'g:' then gs[#gs + 1] = string.sub(ln, 3) elseif ln then lv[tonumber(ln)] = true end
  end
  enqueue_lanes_check(b, KEYS[2], lv, gs)
end
local held = checked(redis.pcall('HLEN', KEYS[8]), KEYS[8])
if entries > 0 and held + entries > cap then
  fail('FLOW_TOO_LARGE', 'the outbox of ' .. q .. ' holds ' .. held .. ' entries, its bound is ' .. cap .. ' (relays are behind)')
end
for i = 1, n do
  if out[i] == 1 then need_type(KEYS[6] .. ids[i], 'hash') end
end
if elog > 0 then need_type(KEYS[7], 'stream') end

local now = now_ms()
local queued, waiting, data, opts, later, sched, laneOf = {}, {}, {}, {}, {}, {}, {}
if X and token == '' then
  redis.call('HINCRBY', KEYS[11], 'deps', kids[0] or 0) -- attach: it waits for these too
elseif X then
  fanout_wait(KEYS[11], KEYS[10], jid, cur, kids[0] or 0)
  waiting[1] = jid
end
-- Each row, and the outbox, is written with one command: the row's own fields, then one
-- `k:<child>` per edge whose parent it is.
local rowOf = {}
for i = 1, n do
  if out[i] == 1 then
    local a = 5 + o + 5 * (i - 1)
    local id, parent, maxA, backoff = ids[i], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
    data[#data + 1] = id
    data[#data + 1] = ARGV[a + 2]
    -- A delayed leaf's lane waits in its opts' third field for its promotion by claim (as enqueue's).
    local ln = run[i] and lane[i]
    if maxA ~= '' or backoff ~= '' or ln then
      opts[#opts + 1] = id
      opts[#opts + 1] = maxA .. '|' .. backoff .. (ln and ('|' .. ln) or '')
    end
    local row
    if kids[i] then
      row = { 'status', 'waiting', 'deps', kids[i] }
      waiting[#waiting + 1] = id
    elseif run[i] then
      row = { 'status', 'scheduled' }
      later[#later + 1] = id
      sched[#sched + 1] = run[i]
      sched[#sched + 1] = id
    else
      row = { 'status', 'pending' }
      queued[#queued + 1] = id
      if lane[i] then laneOf[id] = lane[i] end
    end
    if parent ~= '' then row[#row + 1] = 'parent'; row[#row + 1] = parent end
    rowOf[i] = row
  end
end
if X then rowOf[0] = {} end
local boxH, boxZ = {}, {}
for j = 1, m do
  local a = base + 6 * (j - 1)
  local pid, cid, cq, pol, key, text = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  local pi = index[pid] or 0
  if out[pi] == 1 then
    local row = rowOf[pi]
    row[#row + 1] = 'k:' .. cid
    row[#row + 1] = cq .. ' ' .. pol .. ' ' .. key
    if text ~= '' then
      boxH[#boxH + 1] = 'c:' .. cid
      boxH[#boxH + 1] = text
      boxZ[#boxZ + 1] = selfLease and now + selfLease or now
      boxZ[#boxZ + 1] = 'c:' .. cid
    end
  end
end
for i = 1, n do
  if rowOf[i] then redis.call('HSET', KEYS[6] .. ids[i], unpack(rowOf[i])) end
end
if X and #rowOf[0] > 0 then redis.call('HSET', KEYS[11], unpack(rowOf[0])) end
local boxed = #boxZ / 2
if boxed > 0 then
  redis.call('HSET', KEYS[8], unpack(boxH))
  redis.call('ZADD', KEYS[9], unpack(boxZ))
end
if #data > 0 then
  redis.call('HSET', KEYS[4], unpack(data))
  stamp_version(KEYS[1], meta.v)
end
if #opts > 0 then redis.call('HSET', KEYS[5], unpack(opts)) end
if #sched > 0 then redis.call('ZADD', b .. 'scheduled', unpack(sched)) end
if #queued > 0 then
  -- Ready leaves with a lane join their level or lane list (lua/lib/enqueue-lanes.lua), the
  -- others `pending`; in lanes mode a list that became non-empty joins the ring `groups`.
  local plainQ, byLevel, byGroup, groupOrder = queued, nil, nil, nil
  if laned then plainQ, byLevel, byGroup, groupOrder = flow_lanes_split(queued, laneOf) end
  local ringAdd = {}
  if #plainQ > 0 and redis.call('LPUSH', KEYS[2], unpack(plainQ)) == #plainQ and lanesMode then ringAdd[1] = '' end
  if byLevel then enqueue_lanes_push(b, KEYS[2], byLevel, byGroup, groupOrder, ringAdd) end
  if lanesMode then enqueue_lanes_ring(KEYS, b, lanes, laned, plainQ, ringAdd) end
  if redis.call('LLEN', KEYS[3]) == 0 then redis.call('LPUSH', KEYS[3], '1') end
elseif laned and not lanes then
  redis.call('HSET', KEYS[1], 'lanes', '1')
end
-- meta `waits`: how many jobs of the queue are `waiting` (counts, without a scan of the rows).
if #waiting > 0 then redis.call('HINCRBY', KEYS[1], 'waits', #waiting) end
if boxed > 0 and not selfLease then redis.call('SPUBLISH', KEYS[8], boxed) end
emit(KEYS[7], elog, 'enqueued', queued)
emit(KEYS[7], elog, 'waiting', waiting)
emit(KEYS[7], elog, 'scheduled', later)
if X then return 1 end
return out
