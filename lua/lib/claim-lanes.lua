-- @requires fail types meta policy-text claim-fair claim-policy claim-slide
-- Claim in lanes mode (meta `lanes` set by enqueue once a job carried a priority or a group).
-- Priorities (docs/protocol.md §2): one list per level 1..9 (`<pending>:<p>`), 0 is `pending`
-- (or, with fair lanes, its groups' lists); `levels` holds the levels 1..9 whose list has jobs.
-- Claimed highest level first, FIFO within a level: at most ten lists read, whatever the backlog.
-- A due job joins the list of its level (its row's `prio` / `group` for a retry, else the third
-- field of its opts: a digit is a priority, `g:<name>` a group).
-- claim_lanes answers the lanes state st: take (the ids to claim, in order), tlv (the level of
-- each id taken from a level), tgr (each id's group, '' = none), lrem (how many jobs or lanes
-- remain), and the writes claim_lanes_write makes: ops (per list { key, level, due ids to
-- push, count to pop, levels-set command or false }), the ring's pops and pushes, the level-0
-- lane writes (lwk/lwd/lwp/lwn: key, due ids for its LPUSH end, popped ids back to its RPOP end)
-- and gp (the group policy's writes).
local function claim_lanes(KEYS, b, n, due, dueRow, pol)
  local st = { take = {}, tlv = {}, tgr = {}, ops = {}, lrem = 0, ringPush = {}, ringPop = 0, lwn = 0,
    levels = b .. 'levels', ringKey = b .. 'groups', b = b }
  st.laneKey = function(g) return g == '' and KEYS[2] or b .. 'group:' .. g end
  local take, tlv, ops, levels, prefix = st.take, st.tlv, st.ops, st.levels, KEYS[8]
  local present = checked(redis.pcall('ZRANGE', levels, 0, -1), levels)
  local has = {}
  for i = 1, #present do has[tonumber(present[i])] = true end
  -- The lane of each due job.
  local dueBy, dueG = {}, {}
  for i = 1, #due do
    local p, g = nil, nil
    if dueRow[i] then
      local r = redis.call('HMGET', prefix .. due[i], 'prio', 'group')
      p, g = r[1], r[2]
    end
    if not p and not g then
      local o = checked(redis.pcall('HGET', KEYS[7], due[i]), KEYS[7])
      local third = o and string.match(o, '^[^|]*|[^|]*|([^|]+)')
      if third then
        p = string.match(third, '^%d$')
        g = string.match(third, '^g:(.+)$')
      end
    end
    local d
    if g then
      d = dueG[g] or {}
      dueG[g] = d
    else
      p = tonumber(p) or 0
      if p == 0 then d = dueG[''] or {}; dueG[''] = d else d = dueBy[p] or {}; dueBy[p] = d end
    end
    d[#d + 1] = due[i]
  end
  local need, lrem, none = n, 0, {}
  for L = (#present > 0 or next(dueBy)) and 9 or 0, 1, -1 do -- no level holds ids: nothing to read
    local d = dueBy[L] or none
    if has[L] or #d > 0 then
      local key = KEYS[2] .. ':' .. L
      local left
      if need > 0 then
        local t = checked(redis.pcall('LRANGE', key, -(need + 1), -1), key)
        local fromList = math.min(need, #t)
        for i = #t, #t - fromList + 1, -1 do take[#take + 1] = t[i]; tlv[#take] = L end
        local fromDue = math.min(need - fromList, #d)
        for i = 1, fromDue do take[#take + 1] = d[i]; tlv[#take] = L end
        need = need - fromList - fromDue
        left = #t - fromList + #d - fromDue
        ops[#ops + 1] = { key, L, d, fromList + fromDue, false }
      else
        left = checked(redis.pcall('LLEN', key), key) + #d
        if #d > 0 then ops[#ops + 1] = { key, L, d, 0, false } end
      end
      lrem = lrem + left
      local op = ops[#ops]
      if op and op[2] == L then
        if left == 0 and has[L] then op[5] = 'ZREM' elseif left > 0 and not has[L] then op[5] = 'ZADD' end
      end
    end
  end
  st.need, st.lrem, st.dueG = need, lrem, dueG
  -- Level 0: fair lanes, under a group policy or not. Paused lanes (meta `gpaused`, policy.lua's
  -- `pause`; part of the call's one meta read) are blocked lanes of the policy walk: with
  -- any lane paused, a queue without a group policy is claimed under the neutral one (every lane
  -- weight 1, no cap or limit: the same rotation).
  local paused = need > 0 and policy_paused(queue_meta(KEYS[1]).gpaused)
  if paused then claim_policy_lanes(st, KEYS, b, pol or { ['*'] = { 0, 1, 0, 0, false } }, paused)
  elseif pol then claim_policy_lanes(st, KEYS, b, pol) else claim_fair_lanes(st, KEYS, b) end
  return st
end
-- The lanes' writes (after the claim's ZADD to `active` and the promotion's ZREM).
local function claim_lanes_write(st, KEYS)
  -- A lane list: its due ids pushed (in slices of 1000), then its `pop` oldest ids removed
  -- (LTRIM, not RPOP with a count: the same list, without the removed ids as a reply table).
  local function land(key, d, pop)
    if d then for i = 1, #d, 1000 do redis.call('LPUSH', key, unpack(d, i, math.min(i + 999, #d))) end end
    if pop == 1 then redis.call('RPOP', key) elseif pop > 1 then redis.call('LTRIM', key, 0, -(pop + 1)) end
  end
  local ops, levels = st.ops, st.levels
  for o = 1, #ops do
    local key, L, d, pop, lv = ops[o][1], ops[o][2], ops[o][3], ops[o][4], ops[o][5]
    land(key, #d > 0 and d, pop)
    if lv == 'ZADD' then redis.call('ZADD', levels, L, L) elseif lv == 'ZREM' then redis.call('ZREM', levels, L) end
  end
  for o = 1, st.lwn do
    local d, back = st.lwd[o], st.lwp[o]
    if d then land(st.lwk[o], d, 0) end
    if back then redis.call('RPUSH', st.lwk[o], unpack(back)) end
  end
  if st.ringPop > 0 then redis.call('LTRIM', st.ringKey, 0, -(st.ringPop + 1)) end
  if #st.ringPush > 0 then redis.call('LPUSH', st.ringKey, unpack(st.ringPush)) end
  local gp = st.gp
  if gp then
    -- Group policy: live counts of capped groups, rate windows, the front lane's turn.
    for i = 1, #gp.stale do redis.call('SREM', gp.stale[i][1], gp.stale[i][2]) end
    for i = 1, #gp.adds do redis.call('SADD', gp.adds[i][1], unpack(gp.adds[i][2])) end
    for g, rs in pairs(gp.rate) do
      if rs[4] and rs[4] > 0 then
        if rs[5] then slide_count(rs[5], rs[4])
        elseif rs[1] == 0 then redis.call('SET', st.b .. 'grate:' .. g, rs[4], 'PX', rs[2]) else redis.call('INCRBY', st.b .. 'grate:' .. g, rs[4]) end
      end
    end
    if gp.turn then redis.call('SET', gp.turnKey, gp.turn) elseif gp.turnWas then redis.call('DEL', gp.turnKey) end
  end
end
