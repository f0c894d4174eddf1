-- flow-add.lua: EchoMQ protocol v2. Built from lua/src/flow-add.lua and lua/lib/ by `npm run lua:build`; do not edit.
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
-- The protocol version this build speaks: every script is called with it as ARGV[1] and refuses
-- any other first (run.lua), before it looks at a count, a key or an argument.
local PROTOCOL = '2'
-- The versions of queue data (meta `v`) these scripts read; a queue whose data is of another
-- version is refused, so a runtime of one version never half-applies a transition to another's.
-- v2 reads v1's data unchanged (the layout did not change; docs/wire-changelog.md).
local DATA_VERSIONS = { ['1'] = true, ['2'] = true }
-- A producer's write moves a queue's (or topic's) data to this version: `v` absent or older
-- becomes PROTOCOL, after which runtimes of an older version are refused by the data check (a v1
-- consumer would ignore the stored policy v2 enforces: one rule, never a silent mix).
local function stamp_version(key, v)
  if v ~= PROTOCOL then redis.call('HSET', key, 'v', PROTOCOL) end
end
-- Refusals. A script refuses by raising `EMQ_<CODE> <message>` (error level 0: no position in
-- the text); run() answers it as the error reply. A script that must write before its last check
-- (claim's pop-as-read) sets `on_refusal`, which run() calls before it answers the refusal.
local refusal_hook = nil
local function fail(code, msg) error('EMQ_' .. code .. ' ' .. msg, 0) end
-- Refuses with EMQ_BAD_ARG unless ok (a count, a shape, a mode that does not hold).
local function need(ok, msg) if not ok then fail('BAD_ARG', msg) end end
-- Refuses data of another protocol version than these scripts read (meta `v`, when present).
local function need_data_version(v, key)
  if v and not DATA_VERSIONS[v] then fail('VERSION', key .. ' holds protocol ' .. v .. ' data, script speaks ' .. PROTOCOL) end
end
-- A decimal integer in [lo, hi], or nil: an optional `-`, at most 16 digits; refuses NaN, inf,
-- fractions, exponents, `+`, hex and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- The argument reader: each takes the argument, its range and its name, and answers the value or
-- refuses with EMQ_BAD_ARG naming the argument and what it must be.
local function need_int(s, lo, hi, what)
  local v = int(s, lo, hi)
  if not v then fail('BAD_ARG', what .. ' must be a decimal integer in ' .. lo .. '..' .. hi) end
  return v
end
-- A fencing token: decimal digits, at most 20.
local function need_token(s)
  if type(s) ~= 'string' or #s > 20 or not string.match(s, '^%d+$') then fail('BAD_ARG', 'bad token') end
  return s
end
-- Time is the server's: the epoch ms of this call, read once (Valkey gives a script call one
-- time, so a second TIME would answer the same; parts of a composed script share the read).
local clock_memo = nil
local function now_ms()
  if not clock_memo then
    local t = redis.call('TIME')
    clock_memo = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_memo
end
-- Key types: a key that holds another type than the protocol gives it is EMQ_WRONGTYPE, found
-- before the first write (Valkey does not roll a script back).
local function need_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then fail('WRONGTYPE', key .. ' is a ' .. t .. ', not a ' .. want) end
end
-- The reply of a command run through redis.pcall: WRONGTYPE becomes EMQ_WRONGTYPE naming the key,
-- any other error reply is raised as it is (OOM, NOPERM keep their codes); a reply passes.
local function checked(r, key)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) == 'WRONGTYPE' then fail('WRONGTYPE', key .. ' holds a value of another type than the protocol gives it') end
    error(r.err, 0)
  end
  return r
end
-- Before the first write: `levels`, the ring and every level or group list written are
-- type-checked (byLevel and groupOrder nil when the call gave no lanes).
local function enqueue_lanes_check(b, pending, byLevel, groupOrder)
  checked(redis.pcall('ZCARD', b .. 'levels'), b .. 'levels')
  checked(redis.pcall('LLEN', b .. 'groups'), b .. 'groups')
  if not byLevel then return end
  for p = 1, 9 do
    if byLevel[p] then checked(redis.pcall('LLEN', pending .. ':' .. p), pending .. ':' .. p) end
  end
  for j = 1, #groupOrder do
    local key = b .. 'group:' .. groupOrder[j]
    checked(redis.pcall('LLEN', key), key)
  end
end
-- The pushes onto the group and level lists; a group list that was empty is added to ringAdd.
local function enqueue_lanes_push(b, pending, byLevel, byGroup, groupOrder, ringAdd)
  for j = 1, #groupOrder do
    local g = groupOrder[j]
    if redis.call('LPUSH', b .. 'group:' .. g, unpack(byGroup[g])) == #byGroup[g] then ringAdd[#ringAdd + 1] = g end
  end
  for p = 1, 9 do
    local l = byLevel[p]
    if l then
      redis.call('LPUSH', pending .. ':' .. p, unpack(l))
      redis.call('ZADD', b .. 'levels', p, p)
    end
  end
end
-- After the pushes: the first lanes of the queue set meta `lanes` (and the jobs without a group
-- enqueued before it: `pending` joins the ring too); the lanes that became non-empty join the ring.
local function enqueue_lanes_ring(K, b, wasOn, lanesOn, plainQ, ringAdd)
  if lanesOn and not wasOn then
    redis.call('HSET', K[1], 'lanes', '1')
    if ringAdd[1] ~= '' and redis.call('LLEN', K[2]) > #plainQ then table.insert(ringAdd, 1, '') end
  end
  if #ringAdd > 0 then redis.call('LPUSH', b .. 'groups', unpack(ringAdd)) end
end
-- Lifecycle events (docs/protocol.md §5a): one sharded pub/sub message per call and kind on the
-- queue's events channel, and, when its `elog` is above 0, one entry in the bounded events stream.
local function emit(key, elog, kind, ids)
  if #ids == 0 then return end
  local now = now_ms()
  -- Ids and kinds are validated base62 / fixed words: plain concatenation is valid JSON.
  redis.call('SPUBLISH', key, '{"e":"' .. kind .. '","ids":["' .. table.concat(ids, '","') .. '"],"at":' .. now .. '}')
  if elog > 0 then
    redis.call('XADD', key, 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', table.concat(ids, ' '), 'at', now)
  end
end
-- The 14-byte gate (docs/protocol.md §1): a 3-letter namespace, 11 base62 digits, the body at
-- most 2^64-1 (`LygHa16AHYF`). Compared byte by byte: Lua's `>` on strings follows the server's
-- collation locale, not byte order.
local ID_MAX = 'LygHa16AHYF'
local ID_PATTERN = { job = '^job[0-9A-Za-z]+$', evt = '^evt[0-9A-Za-z]+$', ver = '^ver[0-9A-Za-z]+$' }
local function bad_id(id, ns)
  if type(id) ~= 'string' or #id ~= 14 or not string.match(id, ID_PATTERN[ns or 'job']) then return true end
  local first = string.byte(id, 4)
  if first ~= 76 then return first > 76 end -- 'L', the first digit of the bound: most ids differ there
  for i = 2, 11 do
    local x, y = string.byte(id, i + 3), string.byte(ID_MAX, i)
    if x ~= y then return x > y end
  end
  return false
end
-- A name of the key grammar (docs/protocol.md §2): a queue, a lane group, a schedule, a flow
-- child's key: 1..100 bytes of `A-Za-z0-9_.-`. True when s is not one.
local function bad_name(s)
  return type(s) ~= 'string' or #s == 0 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
end
-- A new job's arguments, checked the same way by enqueue.lua, flow-add.lua and tick.lua. `noun`
-- and `i` name the job in a refusal (`job 3`, `node 2`); the text is built only on a refusal.
-- The payload: 1..limit bytes.
local function need_payload(payload, limit, noun, i)
  if #payload == 0 then fail('BAD_ARG', noun .. ' ' .. i .. ' has an empty payload') end
  if #payload > limit then
    fail('PAYLOAD_TOO_LARGE', noun .. ' ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. limit)
  end
end
-- A backoff: `f:<ms>` fixed or `e:<ms>` exponential, ms 0..86400000.
local function good_backoff(s)
  return int(string.match(s, '^[fe]:(%d+)$'), 0, 86400000) ~= nil
end
-- Its own options, each "" for the consumer's default: max attempts 1..1000, a backoff.
local function need_job_opts(maxA, backoff, noun, i)
  if maxA ~= '' and not int(maxA, 1, 1000) then fail('BAD_ARG', noun .. ' ' .. i .. ' has bad max attempts (1..1000)') end
  if backoff ~= '' and not good_backoff(backoff) then
    fail('BAD_ARG', noun .. ' ' .. i .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
  end
end
-- flow-add.lua's nodes and edges (docs/flows.md), all checked before its first read. `o` is the
-- offset of the nodes (2 in fan-out mode: the running job's id and token come first), `jid` the
-- running job's id in fan-out mode (a parent may then be the running job), `q` this queue's name.

-- Nodes, five arguments each: id, payload, parent ("" = none, "<queue> <id>"), max attempts,
-- backoff. Answers ids (i -> id), index (id -> i) and up (i -> the parent's id when the parent
-- is in this queue).
local function flow_nodes(A, n, o, maxBytes, q, jid)
  local ids, index, up = {}, {}, {}
  for i = 1, n do
    local a = 5 + o + 5 * (i - 1)
    local id, payload, parent = A[a + 1], A[a + 2], A[a + 3]
    if bad_id(id) then fail('BAD_ID', 'node ' .. i .. ' has a malformed id') end
    if index[id] or id == jid then fail('BAD_ARG', 'node ' .. i .. ' repeats the id ' .. id) end
    need_payload(payload, maxBytes, 'node', i)
    if parent ~= '' then
      local pq, pid = string.match(parent, '^([^ ]+) ([^ ]+)$')
      if not pq or bad_name(pq) or bad_id(pid) then
        fail('BAD_ARG', 'node ' .. i .. ' has a malformed parent (expected "<queue> <id>")')
      end
      if pq == q then up[i] = pid end
    end
    need_job_opts(A[a + 4], A[a + 5], 'node', i)
    ids[i], index[id] = id, i
  end
  return ids, index, up
end
-- Edges, six arguments each from `base`: each names a parent of this call (or the running job);
-- a same-queue child is a node of this call whose parent field names that parent; a cross-queue
-- child carries its creation entry. Answers kids (parent index -> its new children, 0 = the
-- running job), edgeOf (child id -> edge) and keys ("<parent> <key>" -> true).
local function flow_edges(A, m, base, index, up, q, jid)
  local kids, edgeOf, keys = {}, {}, {}
  for j = 1, m do
    local a = base + 6 * (j - 1)
    local pid, cid, cq, pol, key, text = A[a + 1], A[a + 2], A[a + 3], A[a + 4], A[a + 5], A[a + 6]
    local pi = index[pid]
    if pid == jid then pi = 0 end
    if not pi then fail('BAD_ARG', 'edge ' .. j .. ' names a parent that is not a node of this call (or the running job)') end
    if bad_id(cid) then fail('BAD_ID', 'edge ' .. j .. ' has a malformed child id') end
    if bad_name(cq) then fail('BAD_ARG', 'edge ' .. j .. ' has a malformed child queue') end
    if pol ~= 'fail' and pol ~= 'ignore' and pol ~= 'continue' and pol ~= 'release' then
      fail('BAD_ARG', 'edge ' .. j .. ' has a bad policy (fail, ignore, continue or release)')
    end
    if bad_name(key) then fail('BAD_ARG', 'edge ' .. j .. ' has a malformed key') end
    if keys[pid .. ' ' .. key] then fail('BAD_ARG', 'edge ' .. j .. ' repeats the key ' .. key) end
    if edgeOf[cid] then fail('BAD_ARG', 'edge ' .. j .. ' repeats the child ' .. cid) end
    keys[pid .. ' ' .. key] = true
    if cq == q then
      local ci = index[cid]
      if not ci or up[ci] ~= pid or text ~= '' then
        fail('BAD_ARG', 'edge ' .. j .. ': a child in this queue must be a node of this call naming its parent, without an entry')
      end
    else
      if index[cid] then fail('BAD_ARG', 'edge ' .. j .. ': a node of this call is in this queue') end
      if #text == 0 or #text > 536870912 then fail('BAD_ARG', 'edge ' .. j .. ' has no creation entry') end
    end
    edgeOf[cid] = j
    kids[pi] = (kids[pi] or 0) + 1
  end
  return kids, edgeOf, keys
end
-- Every same-queue parent reference is an edge; the tree of each node is the node whose parent
-- is not in this call (walks are bounded by n, so a cycle is refused). Answers root (i -> the
-- index of its tree's root).
local function flow_roots(n, ids, index, up, edgeOf, jid)
  local root = {}
  for i = 1, n do
    if up[i] and ((not index[up[i]] and up[i] ~= jid) or not edgeOf[ids[i]]) then
      fail('BAD_ARG', 'node ' .. i .. ' names a parent in this queue that is not a node of this call')
    end
    local r, steps = i, 0
    while up[r] and up[r] ~= jid do
      r = index[up[r]]
      steps = steps + 1
      if steps > n then fail('BAD_ARG', 'the parent references of this call form a cycle') end
    end
    root[i] = r
  end
  return root
end
-- Run times (optional, after the lease): per node i, A[at + i] is "" (ready now, level 0) or
-- space-separated tokens: "d:<ms>" (a delay, 0..315360000000, from `now` on the server clock)
-- or "t:<ms>" (a run-at, epoch ms 0..7258118400000); "p:<1..9>" (a priority) or "g:<lane>" (a
-- fair lane, 1..100 of [A-Za-z0-9_.-]). Only a leaf may have any. Answers run (i -> its run-at,
-- only when after now) and lane (i -> "<p>" or "g:<lane>", as enqueue's lane argument).
local function flow_runs(A, n, at, kids, now)
  local run, lane = {}, {}
  if not at then return run, lane end
  for i = 1, n do
    local s = A[at + i]
    if s ~= '' then
      if kids[i] then fail('BAD_ARG', 'node ' .. i .. ' has children and a run time or lane (only a leaf may have one)') end
      local when, ln = nil, nil
      for tok in string.gmatch(s .. ' ', '([^ ]*) ') do
        local kind, v = string.match(tok, '^([dtpg]):(.+)$')
        local ok = false
        if (kind == 'd' or kind == 't') and not when then
          local ms = int(v, 0, kind == 'd' and 315360000000 or 7258118400000)
          if ms then when, ok = (kind == 'd' and now + ms or ms), true end
        elseif kind == 'p' and not ln then
          local pr = int(v, 1, 9)
          if pr then ln, ok = tostring(pr), true end
        elseif kind == 'g' and not ln and not bad_name(v) then
          ln, ok = 'g:' .. v, true
        end
        if not ok then fail('BAD_ARG', 'node ' .. i .. ' has a malformed run time or lane (expected "d:<ms>" or "t:<epoch ms>", "p:<1..9>" or "g:<lane>", space-separated)') end
      end
      if when and when > now then run[i] = when end
      lane[i] = ln
    end
  end
  return run, lane
end
-- The ready leaves with a lane (docs/protocol.md §5), split as enqueue-lanes.lua splits a call:
-- answers plainQ (ids for `pending`), byLevel (level -> ids), byGroup (lane -> ids) and
-- groupOrder (the lanes in order of first appearance).
local function flow_lanes_split(queued, laneOf)
  local plainQ, byLevel, byGroup, groupOrder = {}, {}, {}, {}
  for j = 1, #queued do
    local id = queued[j]
    local ln = laneOf[id]
    local g = ln and string.match(ln, '^g:(.+)$')
    if g then
      local l = byGroup[g]
      if not l then l = {}; byGroup[g] = l; groupOrder[#groupOrder + 1] = g end
      l[#l + 1] = id
    elseif ln then
      local p = tonumber(ln)
      byLevel[p] = byLevel[p] or {}
      byLevel[p][#byLevel[p] + 1] = id
    else
      plainQ[#plainQ + 1] = id
    end
  end
  return plainQ, byLevel, byGroup, groupOrder
end
-- flow-add.lua's fan-out mode (docs/flows.md, "Fanning out from a running job"): the running job
-- `jid` (its row `row`, in `active`) gets children. Fenced by its claim token: a stale holder
-- is refused and changes nothing, so a fan-out is never applied twice.

-- Before any write: the row and `active` are read; answers the row's status, token and deps
-- (cur), or nil when the caller does not hold the job's current claim. The children of an
-- earlier fan-out (`k:<child>` = "<queue> <policy> <key>") may not repeat in this call.
local function fanout_fence(row, active, token, jid, edgeOf, keys)
  local cur = checked(redis.pcall('HMGET', row, 'status', 'token', 'deps'), row)
  checked(redis.pcall('ZCARD', active), active)
  if token == '' then
    if cur[1] ~= 'waiting' then return nil end -- attach mode: a waiting parent only
  elseif cur[1] ~= 'active' or cur[2] ~= token then
    return nil
  end
  if cur[3] then
    local all = redis.call('HGETALL', row)
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 2) == 'k:' then
        local key = string.match(all[i + 1], '^[^ ]+ [^ ]+ (.*)$')
        if edgeOf[string.sub(all[i], 3)] or keys[jid .. ' ' .. key] then
          fail('BAD_ARG', 'a new child repeats the id or key of an earlier child (' .. key .. ')')
        end
      end
    end
  end
  return cur
end
-- The first writes: the running job becomes a waiting parent, out of `active`, its attempt
-- given back, `deps` raised by its `added` new children.
local function fanout_wait(row, active, jid, cur, added)
  redis.call('ZREM', active, jid)
  redis.call('HSET', row, 'status', 'waiting', 'deps', (tonumber(cur[3]) or 0) + added)
  redis.call('HINCRBY', row, 'attempts', -1)
end
-- The key grammar (docs/protocol.md §2): every key a script is given must be the one the grammar
-- spells. A queue's keys share the base `emq:{<q>}:` (q a name: 1..100 of `A-Za-z0-9_.-`), read
-- from its meta key, KEYS[1]; keys a script reaches without declaring them are spelt from it too.
local function queue_base(meta)
  if type(meta) ~= 'string' or #meta > 110 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<queue>}:meta of a queue')
  end
  return string.sub(meta, 1, -5)
end
-- Checks keys[i] = base .. names[i] for i = from..#names (names[1] is the meta key's `meta`).
local function need_keys(keys, base, names, from)
  for i = from or 2, #names do
    if keys[i] ~= base .. names[i] then
      fail('BAD_ARG', 'KEYS must be the keys ' .. table.concat(names, ', ') .. ' of one queue, in this order (KEYS[' .. i .. '] is not)')
    end
  end
end
-- A declared row key must be the row (`<prefix><id>`) of its own id.
local function need_row(key, prefix, id)
  if key ~= prefix .. id then fail('BAD_ARG', 'the row key ' .. tostring(key) .. ' is not the row of ' .. id) end
end
-- A queue's meta hash (docs/protocol.md §2), read once per call with every field a transition
-- uses (parts of a composed script share the read: no part writes a field another part reads),
-- and its data version checked. Fields: v, elog, token, lanes, xtra, paused, gcap, keepc, rate (the queue's
-- stored rate limit "<max> <ms>"), gpol (its stored group policy), gpaused (its paused lanes; all
-- three written by policy.lua), stamp (claims record attempt starts, claim.lua), refs (the queue uses business ids, refs.lua).
local meta_memo = nil
local function queue_meta(key)
  if not meta_memo then
    local m = checked(redis.pcall('HMGET', key, 'v', 'elog', 'token', 'lanes', 'xtra', 'paused', 'gcap', 'keepc', 'rate', 'gpol', 'gpaused', 'stamp', 'refs'), key)
    need_data_version(m[1], key)
    meta_memo = { v = m[1], elog = tonumber(m[2]) or 0, token = m[3], lanes = m[4], xtra = m[5], paused = m[6], gcap = m[7], keepc = m[8], rate = m[9], gpol = m[10], gpaused = m[11], stamp = m[12], refs = m[13] }
  end
  return meta_memo
end
-- The runner every built script ends with (`return run(main)`): the version is checked before
-- anything else, so a caller of another version always hears EMQ_VERSION naming both versions;
-- then the script's body runs, and a refusal it raised (or a command's error) is its reply.
local function version_error(v)
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. PROTOCOL .. ', caller speaks ' .. string.sub(tostring(v), 1, 32))
end
-- A call's outcome as an error reply: the hook (if any) first, so a refusal still writes nothing.
local function refusal(r)
  if refusal_hook then local undo = refusal_hook; refusal_hook = nil; undo() end
  return redis.error_reply(type(r) == 'table' and tostring(r.err) or tostring(r))
end
local function run(main)
  if ARGV[1] ~= PROTOCOL then return version_error(ARGV[1]) end
  local ok, r = pcall(main, KEYS, ARGV)
  if ok then return r end
  return refusal(r)
end
local function main(KEYS, ARGV)
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
end
return run(main)
