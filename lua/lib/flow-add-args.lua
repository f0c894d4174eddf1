-- @requires fail int ids names job-args
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
