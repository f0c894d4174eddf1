-- @requires types
-- enqueue.lua with lanes (docs/protocol.md §5, Priorities and Fair lanes): a ready job of level
-- p >= 1 joins `<pending>:<p>` and p joins `levels`; a ready job of group g joins `group:<g>`;
-- in lanes mode (meta `lanes`, or this call turns it on) a lane list that goes from empty to
-- non-empty joins the ring `groups` ("" for `pending`), so claim rotates over it.

-- The second pass over the jobs added (out[i] == 1), so the plain loop stays as it is: a
-- delayed job's lane waits in opts (a third field: the priority, or g:<group>) for its promotion
-- by claim, and a job's extras (a fourth field) for its first claim; a later field of one HSET
-- wins over an earlier one. Answers plainQ (the queued ids of level 0 without a group), byLevel
-- (level -> ids), byGroup (group -> ids), groupOrder (the groups in order of first appearance),
-- lanesOn (a job of this call has a lane) and xtraOn (a job of this call has extras).
local function enqueue_lanes_split(c, A, out, queued, scheduled, opts)
  local pri, grp, ext, ids = c.pri, c.grp, c.ext, c.ids
  local plainQ, byLevel, byGroup, groupOrder, lanesOn, xtraOn = {}, {}, {}, {}, false, false
  local lv, lg, delayed = {}, {}, {}
  for j = 1, #scheduled do delayed[scheduled[j]] = true end
  for i = 1, c.n do
    local p, g, id = pri[i], grp[i], ids[i]
    local x = ext and out[i] == 1 and ext[i]
    if out[i] == 1 and (p > 0 or g) then
      lanesOn = true
      lv[id], lg[id] = p, g
    end
    local lane = out[i] == 1 and delayed[id] and (p > 0 or g) and (g and ('g:' .. g) or p)
    if lane or x then
      local j = 4 + 6 * (i - 1)
      opts[#opts + 1] = id
      opts[#opts + 1] = A[j + 5] .. '|' .. A[j + 6] .. '|' .. (lane or '') .. (x and ('|' .. x) or '')
      if x then xtraOn = true end
    end
  end
  for j = 1, #queued do
    local id = queued[j]
    local p, g = lv[id], lg[id]
    if g then
      local l = byGroup[g]
      if not l then l = {}; byGroup[g] = l; groupOrder[#groupOrder + 1] = g end
      l[#l + 1] = id
    elseif p and p > 0 then
      local l = byLevel[p]
      if not l then l = {}; byLevel[p] = l end
      l[#l + 1] = id
    else
      plainQ[#plainQ + 1] = id
    end
  end
  return plainQ, byLevel, byGroup, groupOrder, lanesOn, xtraOn
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
