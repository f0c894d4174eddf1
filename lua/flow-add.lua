-- flow-add.lua: EchoMQ protocol v1. Creates the nodes of one or many flows that live in ONE queue
-- (docs/flows.md): a node with children is written `waiting` (its row holds `deps`, the number of
-- children not yet finished, and one `k:<child>` field per child), a leaf is written `pending`
-- (its id joins `pending`). A node whose parent is in another queue names it in its row
-- (`parent` = "<queue> <id>"). A child in ANOTHER queue is not created here: its creation is
-- written to this queue's outbox (entry `c:<child id>`), relayed by any live node to that queue
-- with this same script, and acknowledged (outbox-ack.lua). Idempotent per tree: a tree of this
-- call (a node whose parent is not in this call, and its descendants in this call) of which any
-- node's id already holds data is skipped whole, so a replayed relay changes nothing.
--
-- Fan-out mode (11 keys): gives a RUNNING job children (docs/flows.md, "Fanning out from a
-- running job"). Fenced by the job's claim token, the job leaves `active` and becomes a `waiting`
-- parent (its attempt given back, `deps` raised by its new children, one `k:<child>` each; an
-- earlier fan-out's child ids and keys may not repeat); the new children are created as above.
-- A stale holder is refused and changes nothing, so a fan-out is never applied twice.
--
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:pending  list of pending ids
-- KEYS[3]  emq:{q}:wake     list that idle consumers block on
-- KEYS[4]  emq:{q}:data     hash id -> payload
-- KEYS[5]  emq:{q}:opts     hash id -> "<max attempts>|<backoff>"
-- KEYS[6]  emq:{q}:job:     prefix of job rows
-- KEYS[7]  emq:{q}:events   lifecycle events: sharded channel and bounded stream
-- KEYS[8]  emq:{q}:outbox   hash entry id -> entry text (also the channel the relay listens on)
-- KEYS[9]  emq:{q}:outdue   zset entry id -> due at (ms): when a relay may take the entry
-- KEYS[10] emq:{q}:active   (fan-out mode only) zset id -> lease deadline
-- KEYS[11] emq:{q}:job:<id> (fan-out mode only) the running job's row
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  largest payload in bytes (1..536870912)
-- ARGV[3]  outbox bound: the most entries the outbox may hold after this call (1..10000000)
-- ARGV[4]  n, the number of nodes (1..1000; fan-out mode 0..1000)
-- ARGV[5]  m, the number of child edges (0..1000; fan-out mode 1..1000)
-- ARGV[6], ARGV[7] (fan-out mode only) the running job's id and its fencing token; o = 2 in
--          fan-out mode, else 0, in the offsets below (a parent may then be the running job)
-- ARGV[6+o+5(i-1) .. 10+o+5(i-1)] per node i: id; payload (JSON text, 1..limit bytes); parent
--          ("" = none, "<other queue> <id>" = a parent in another queue, "<this queue> <id>" =
--          a node of this call); max attempts (1..1000 or ""); backoff ("f:<ms>"/"e:<ms>" or "")
-- then per edge j (6 arguments): parent id (a node of this call); child id; child queue (a
--          queue name); failure policy (`fail`, `ignore`, `continue`); key (1..100 of
--          [A-Za-z0-9_.-], unique among the parent's children); creation entry text ("" when
--          the child queue is this queue and the child a node of this call, else the relay's
--          text "c <child queue> <subtree JSON>", 1..limit bytes)
-- then, optionally, a self-relay lease in ms (1..86400000): the caller relays the creation
--          entries this call writes itself (it knows them: the entry texts of the edges of the
--          trees created); they are written already taken (due at now + lease, as outbox-take
--          would leave them) and no outbox signal is sent. If the caller dies first, any relay
--          takes them when the lease lapses.
-- Returns: an array of n integers: 1 = created, 0 = skipped (its tree already existed). Fan-out
--          mode: 1 = the job now waits for its new children, 0 = refused (not active under that
--          token; nothing written).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, keys that are not this queue's, a node
--          whose parent is in this queue but not in this call, an edge that does not match its
--          child, a cycle, a repeated id), EMQ_VERSION, EMQ_WRONGTYPE, EMQ_BAD_ID,
--          EMQ_PAYLOAD_TOO_LARGE, EMQ_BATCH_TOO_LARGE, EMQ_FLOW_TOO_LARGE (the outbox would pass
--          its bound). Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- The reply of a command run through redis.pcall, when it failed: WRONGTYPE becomes
-- EMQ_WRONGTYPE naming the key, any other error passes as it is; nil when it succeeded.
local function refused(r, key)
  if type(r) ~= 'table' or not r.err then return nil end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' holds a value of another type than the protocol gives it')
  end
  return r
end
if (#KEYS ~= 9 and #KEYS ~= 11) or #ARGV < 5 then return redis.error_reply('EMQ_BAD_ARG expected 9 (or 11) keys and at least 5 arguments') end
local X = #KEYS == 11 -- fan-out mode: a running job gets children
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, pending, wake, data, opts, job:, events, outbox, outdue.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'pending' or KEYS[3] ~= b .. 'wake'
  or KEYS[4] ~= b .. 'data' or KEYS[5] ~= b .. 'opts' or KEYS[6] ~= b .. 'job:'
  or KEYS[7] ~= b .. 'events' or KEYS[8] ~= b .. 'outbox' or KEYS[9] ~= b .. 'outdue' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, pending, wake, data, opts, job:, events, outbox, outdue of one queue, in this order')
end
if X and KEYS[10] ~= b .. 'active' then return redis.error_reply('EMQ_BAD_ARG KEYS[10] must be the active key of the queue') end
local q = string.match(KEYS[1], '^emq:{([A-Za-z0-9_.-]+)}:meta$')
if not q then return redis.error_reply('EMQ_BAD_ARG KEYS[1] is not the meta key of a queue') end
-- Lifecycle events: one sharded pub/sub message per call and kind on the events channel, and,
-- when the queue's `elog` (set by enqueue) is above 0, one entry in the bounded events stream.
local function emit(key, elog, kind, ids, now)
  if #ids == 0 then return end
  -- Ids and kinds are validated base62 / fixed words: plain concatenation is valid JSON.
  redis.call('SPUBLISH', key, '{"e":"' .. kind .. '","ids":["' .. table.concat(ids, '","') .. '"],"at":' .. now .. '}')
  if elog > 0 then
    redis.call('XADD', key, 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', table.concat(ids, ' '), 'at', now)
  end
end
-- The 14-byte gate: namespace `job`, 11 base62 digits, body at most 2^64-1. Compared byte by
-- byte: Lua's `>` on strings follows the server's collation locale, not byte order.
local function badId(id)
  if #id ~= 14 or not string.match(id, '^job[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
-- A queue name or child key of the grammar: 1..100 of [A-Za-z0-9_.-].
local function badName(s)
  return type(s) ~= 'string' or #s == 0 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
end
local maxBytes, cap = int(ARGV[2], 1, 536870912), int(ARGV[3], 1, 10000000)
local n, m = int(ARGV[4], X and 0 or 1, 1000000000), int(ARGV[5], X and 1 or 0, 1000000000)
if not maxBytes or not cap or not n or not m then
  return redis.error_reply('EMQ_BAD_ARG payload limit (1..536870912), outbox bound (1..10000000), node count (>= 1; fan-out >= 0) and edge count (>= 0; fan-out >= 1) must be integers')
end
if n > 1000 or m > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 nodes and 1000 edges per call') end
local o, jid, token = 0, nil, nil
if X then
  o, jid, token = 2, ARGV[6], ARGV[7]
  if badId(jid) then return redis.error_reply('EMQ_BAD_ID the running job has a malformed id') end
  if KEYS[11] ~= KEYS[6] .. jid then return redis.error_reply('EMQ_BAD_ARG KEYS[11] is not the row of ' .. jid) end
  if type(token) ~= 'string' or #token > 20 or not string.match(token, '^%d+$') then return redis.error_reply('EMQ_BAD_ARG bad token') end
end
local selfLease = nil
if #ARGV == 6 + o + 5 * n + 6 * m then
  selfLease = int(ARGV[#ARGV], 1, 86400000)
  if not selfLease then return redis.error_reply('EMQ_BAD_ARG self-relay lease must be 1..86400000 ms') end
elseif #ARGV ~= 5 + o + 5 * n + 6 * m then
  return redis.error_reply('EMQ_BAD_ARG expected ' .. (5 * n) .. ' node and ' .. (6 * m) .. ' edge arguments (and an optional self-relay lease)')
end
-- Nodes: ids, payloads, parents, own options.
local ids, index, up = {}, {}, {}
for i = 1, n do
  local a = 5 + o + 5 * (i - 1)
  local id, payload, parent, maxA, backoff = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  if badId(id) then return redis.error_reply('EMQ_BAD_ID node ' .. i .. ' has a malformed id') end
  if index[id] or id == jid then return redis.error_reply('EMQ_BAD_ARG node ' .. i .. ' repeats the id ' .. id) end
  if #payload == 0 then return redis.error_reply('EMQ_BAD_ARG node ' .. i .. ' has an empty payload') end
  if #payload > maxBytes then
    return redis.error_reply('EMQ_PAYLOAD_TOO_LARGE node ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. maxBytes)
  end
  if parent ~= '' then
    local pq, pid = string.match(parent, '^([^ ]+) ([^ ]+)$')
    if not pq or badName(pq) or badId(pid) then
      return redis.error_reply('EMQ_BAD_ARG node ' .. i .. ' has a malformed parent (expected "<queue> <id>")')
    end
    if pq == q then up[i] = pid end
  end
  if maxA ~= '' and not int(maxA, 1, 1000) then
    return redis.error_reply('EMQ_BAD_ARG node ' .. i .. ' has bad max attempts (1..1000)')
  end
  if backoff ~= '' and not int(string.match(backoff, '^[fe]:(%d+)$'), 0, 86400000) then
    return redis.error_reply('EMQ_BAD_ARG node ' .. i .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
  end
  ids[i], index[id] = id, i
end
-- Edges: each names a parent of this call; a same-queue child is a node of this call whose
-- parent field names that parent; a cross-queue child carries its creation entry.
local kids, edgeOf, keys = {}, {}, {}
local base = 5 + o + 5 * n
for j = 1, m do
  local a = base + 6 * (j - 1)
  local pid, cid, cq, pol, key, text = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  local pi = index[pid]
  if pid == jid then pi = 0 end -- fan-out mode: the running job (its kids count is kids[0])
  if not pi then return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ' names a parent that is not a node of this call (or the running job)') end
  if badId(cid) then return redis.error_reply('EMQ_BAD_ID edge ' .. j .. ' has a malformed child id') end
  if badName(cq) then return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ' has a malformed child queue') end
  if pol ~= 'fail' and pol ~= 'ignore' and pol ~= 'continue' then
    return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ' has a bad policy (fail, ignore or continue)')
  end
  if badName(key) then return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ' has a malformed key') end
  if keys[pid .. ' ' .. key] then return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ' repeats the key ' .. key) end
  if edgeOf[cid] then return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ' repeats the child ' .. cid) end
  keys[pid .. ' ' .. key] = true
  if cq == q then
    local ci = index[cid]
    if not ci or up[ci] ~= pid or text ~= '' then
      return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ': a child in this queue must be a node of this call naming its parent, without an entry')
    end
  else
    if index[cid] then return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ': a node of this call is in this queue') end
    if #text == 0 or #text > 536870912 then return redis.error_reply('EMQ_BAD_ARG edge ' .. j .. ' has no creation entry') end
  end
  edgeOf[cid] = j
  kids[pi] = (kids[pi] or 0) + 1
end
-- Every same-queue parent reference is an edge; the tree of each node is the node whose parent
-- is not in this call (walks are bounded by n, so a cycle is refused).
local root = {}
for i = 1, n do
  if up[i] then
    if (not index[up[i]] and up[i] ~= jid) or not edgeOf[ids[i]] then
      return redis.error_reply('EMQ_BAD_ARG node ' .. i .. ' names a parent in this queue that is not a node of this call')
    end
  end
  local r, steps = i, 0
  while up[r] and up[r] ~= jid do
    r = index[up[r]]
    steps = steps + 1
    if steps > n then return redis.error_reply('EMQ_BAD_ARG the parent references of this call form a cycle') end
  end
  root[i] = r
end

-- Reads first: every key this call writes is read before anything is written.
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'elog', 'lanes')
local e = refused(meta, KEYS[1])
if e then return e end
-- Lanes mode (meta `lanes`, docs/protocol.md §5 Fair lanes): `pending` joins the ring `groups`
-- when a push makes it non-empty; the ring is type-checked here, before any write.
if meta[3] == '1' then
  local t = redis.call('TYPE', b .. 'groups')['ok']
  if t ~= 'none' and t ~= 'list' then return redis.error_reply('EMQ_WRONGTYPE ' .. b .. 'groups is a ' .. t .. ', not a list') end
end
local stored = meta[1]
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
local elog = tonumber(meta[2]) or 0 -- written by enqueue, validated there
local cur = {}
if X then
  -- The fence: only the holder of the running job's current claim may fan out.
  cur = redis.pcall('HMGET', KEYS[11], 'status', 'token', 'deps')
  e = refused(cur, KEYS[11]) or refused(redis.pcall('ZCARD', KEYS[10]), KEYS[10])
  if e then return e end
  if cur[1] ~= 'active' or cur[2] ~= token then return 0 end
  if cur[3] then
    -- Children of an earlier fan-out: the new ones may not reuse their ids or keys.
    local all = redis.call('HGETALL', KEYS[11])
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 2) == 'k:' then
        local key = string.match(all[i + 1], '^[^ ]+ [^ ]+ (.*)$')
        if edgeOf[string.sub(all[i], 3)] or keys[jid .. ' ' .. key] then
          return redis.error_reply('EMQ_BAD_ARG a new child repeats the id or key of an earlier child (' .. key .. ')')
        end
      end
    end
  end
end
local skip = {}
if n > 0 then
  local have = redis.pcall('HMGET', KEYS[4], unpack(ids))
  e = refused(have, KEYS[4])
  if e then return e end
  for i = 1, n do
    if have[i] and X then return redis.error_reply('EMQ_BAD_ARG node ' .. i .. ' exists already (' .. ids[i] .. ')') end
    if have[i] then skip[root[i]] = true end
  end
end
local out, entries = { [0] = 1 }, 0
for i = 1, n do out[i] = skip[root[i]] and 0 or 1 end
for j = 1, m do
  local a = base + 6 * (j - 1)
  if out[index[ARGV[a + 1]] or 0] == 1 and ARGV[a + 6] ~= '' then entries = entries + 1 end
end
for _, kr in ipairs({ { KEYS[2], 'LLEN' }, { KEYS[3], 'LLEN' }, { KEYS[5], 'HLEN' }, { KEYS[9], 'ZCARD' } }) do
  e = refused(redis.pcall(kr[2], kr[1]), kr[1])
  if e then return e end
end
local held = redis.pcall('HLEN', KEYS[8])
e = refused(held, KEYS[8])
if e then return e end
if entries > 0 and held + entries > cap then
  return redis.error_reply('EMQ_FLOW_TOO_LARGE the outbox of ' .. q .. ' holds ' .. held .. ' entries, its bound is ' .. cap .. ' (relays are behind)')
end
for i = 1, n do
  if out[i] == 1 then
    local r = redis.pcall('TYPE', KEYS[6] .. ids[i])['ok']
    if r ~= 'none' and r ~= 'hash' then return redis.error_reply('EMQ_WRONGTYPE the row of ' .. ids[i] .. ' is a ' .. r) end
  end
end
if elog > 0 then
  local kind = redis.call('TYPE', KEYS[7])['ok']
  if kind ~= 'none' and kind ~= 'stream' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[7] .. ' holds a ' .. kind .. ', not a stream')
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local queued, waiting, data, opts = {}, {}, {}, {}
if X then
  -- The running job becomes a waiting parent: out of `active`, its attempt given back.
  redis.call('ZREM', KEYS[10], jid)
  redis.call('HSET', KEYS[11], 'status', 'waiting', 'deps', (tonumber(cur[3]) or 0) + (kids[0] or 0))
  redis.call('HINCRBY', KEYS[11], 'attempts', -1)
  waiting[1] = jid
end
-- Each row, and the outbox, is written with one command: the row's own fields, then one `k:<child>`
-- per edge whose parent it is.
local rowOf = {}
for i = 1, n do
  if out[i] == 1 then
    local a = 5 + o + 5 * (i - 1)
    local id, parent, maxA, backoff = ids[i], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
    data[#data + 1] = id
    data[#data + 1] = ARGV[a + 2]
    if maxA ~= '' or backoff ~= '' then
      opts[#opts + 1] = id
      opts[#opts + 1] = maxA .. '|' .. backoff
    end
    local row
    if kids[i] then
      row = { 'status', 'waiting', 'deps', kids[i] }
      waiting[#waiting + 1] = id
    else
      row = { 'status', 'pending' }
      queued[#queued + 1] = id
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
  if not stored then redis.call('HSET', KEYS[1], 'v', V) end
end
if #opts > 0 then redis.call('HSET', KEYS[5], unpack(opts)) end
if #queued > 0 then
  if redis.call('LPUSH', KEYS[2], unpack(queued)) == #queued and meta[3] == '1' then redis.call('LPUSH', b .. 'groups', '') end
  if redis.call('LLEN', KEYS[3]) == 0 then redis.call('LPUSH', KEYS[3], '1') end
end
-- meta `waits`: how many jobs of the queue are `waiting` (counts, without a scan of the rows).
if #waiting > 0 then redis.call('HINCRBY', KEYS[1], 'waits', #waiting) end
if boxed > 0 and not selfLease then redis.call('SPUBLISH', KEYS[8], boxed) end
emit(KEYS[7], elog, 'enqueued', queued, now)
emit(KEYS[7], elog, 'waiting', waiting, now)
if X then return 1 end
return out
