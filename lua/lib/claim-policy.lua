-- @requires fail int types clock claim-slide
-- Claim's group policy of fair lanes (docs/protocol.md §5, "Group policy"): the stored policy
-- (meta `gpol`, written by policy.lua; parsed by policy_groups, lua/lib/policy-text.lua), read in
-- lanes mode only.
-- Level 0 under a group policy. The ring is walked from its RPOP end: a group at its cap (its
-- live members of `gactive:<g>`, ids still in `active`) or out of its rate window (`grate:<g>`)
-- is blocked: it goes to the back of the ring without a job and its work does not count as
-- remaining (a rate-blocked one sets the wait to its window's rest). The others form the window,
-- until their turns cover need: a lane's turn is up to its weight w in jobs (less what an earlier
-- claim took of the front lane's turn, `gturn` = "<taken> <lane>"), served in ring order, in
-- rounds when the window is the whole ring. A lane whose turn was cut short by need, in whichever
-- round, stays at the front (what it had of that turn in `gturn`) and the lanes after it keep
-- their place; the lanes served before it go to the back. So claims of any size deal the turns
-- claims of one job deal, and a lane's share is w/W at any claim size and concurrency. A paused
-- lane (meta `gpaused`, the set `paused`) is blocked like a lane at its cap. At most 1000 ring
-- entries are examined per claim. Reads only (no pop): the writes are st.gp's, made by
-- claim_lanes_write.
local function claim_policy_lanes(st, KEYS, b, pol, paused)
  local ringKey, need, dueG, take, tlv, tgr, ops, laneKey = st.ringKey, st.need, st.dueG, st.take, st.tlv, st.tgr, st.ops, st.laneKey
  local lrem, ringPush = st.lrem, st.ringPush
  local gp = { stale = {}, adds = {}, rate = {}, wait = nil, turn = false, turnKey = b .. 'gturn' }
  st.gp = gp
  local turn = checked(redis.pcall('GET', gp.turnKey), gp.turnKey)
  gp.turnWas = turn
  local tUsed, tG = 0, nil
  if turn then
    local u, g = string.match(turn, '^(%d+) (.*)$')
    tUsed, tG = tonumber(u) or 0, g
  end
  local llen = checked(redis.pcall('LLEN', ringKey), ringKey)
  -- Phase 1: walk the ring, policy only (no list read): blocked lanes, then the window.
  local win, seen, cover, pos = {}, {}, 0, 0
  local function settings(g)
    if g == '' then return 0, 1, 0, 0, false end
    local s = pol[g] or pol['*']
    return s[1], s[2], s[3], s[4], s[5]
  end
  -- A lane's room: how many more jobs it may start now (nil = unlimited), and why it is 0.
  local function room(g)
    local cap, w, rmax, rms, sliding = settings(g)
    local allow, why, rest = nil, nil, nil
    if paused and paused[g] then return 0, 'paused', w, nil end
    if cap > 0 then
      local key = b .. 'gactive:' .. g
      local m = checked(redis.pcall('SMEMBERS', key), key)
      local live = 0
      for i = 1, #m do
        local sc = redis.pcall('ZSCORE', KEYS[4], m[i])
        if type(sc) == 'table' and sc.err then checked(sc, KEYS[4]) end
        if sc then live = live + 1 else gp.stale[#gp.stale + 1] = { key, m[i] } end
      end
      allow, why = math.max(0, cap - live), 'cap'
    end
    if rmax > 0 then
      local used, left, sw
      if sliding then -- (lua/lib/claim-slide.lua: the lane's log `grlog:<g>`)
        sw = slide_read(b .. 'grlog:' .. g, rms, now_ms())
        used, left = sw.used, slide_rest(sw)
      else
        local key = b .. 'grate:' .. g
        used = tonumber(checked(redis.pcall('GET', key), key)) or 0
        left = used > 0 and redis.call('PTTL', key) or -1
        if left < 0 then used, left = 0, rms end -- no window open: a new one of rms
      end
      if not allow or rmax - used < allow then allow, why = math.max(0, rmax - used), 'rate' end
      gp.rate[g] = { used, rms, left, nil, sw }
      rest = left
    end
    return allow, why, w, rest
  end
  while cover < need and pos < llen and pos < 1000 do
    local c = math.min(need - cover, llen - pos, 1000 - pos)
    local chunk = checked(redis.pcall('LRANGE', ringKey, -(pos + c), -(pos + 1)), ringKey)
    for i = #chunk, 1, -1 do
      local g = chunk[i]
      if cover >= need then break end
      pos = pos + 1
      if not seen[g] then -- a repeated entry is a stale hint: dropped
        seen[g] = true
        local allow, why, w, rest = room(g)
        if allow == 0 then
          ringPush[#ringPush + 1] = { g, pos } -- blocked: to the back, its work not remaining
          if why == 'rate' and (not gp.wait or rest < gp.wait) then gp.wait = math.max(1, rest) end
        else
          local q = w
          if #win == 0 and pos == 1 and g == tG then q = math.max(1, w - tUsed) end
          win[#win + 1] = { g = g, w = w, q = q, allow = allow or 1000000, why = why, rest = rest, at = pos, used = (q < w) and tUsed or 0 }
          cover = cover + math.min(q, allow or q)
        end
      end
    end
  end
  local whole = pos >= llen
  -- The rounds: enough for the ring's lanes to cover need (the jobs without a group, outside the
  -- ring, are not counted: `pending` may be empty, and counting it would stop short of need).
  local rounds = (whole and cover > 0) and math.ceil(need / cover) or 1
  if whole and not seen[''] and cover < need then
    win[#win + 1] = { g = '', w = 1, q = 1, allow = 1000000, at = pos + 1, used = 0, outside = true }
    if cover == 0 then rounds = need end
  end
  if not whole then lrem = lrem + 1 end -- lanes beyond this claim's walk
  -- Phase 2: one read per window lane of the most it may give (+1 tells "more").
  for j = 1, #win do
    local L = win[j]
    L.d = dueG[L.g] or {}
    L.cap = math.min(L.allow, L.q + L.w * (rounds - 1), need)
    local key = laneKey(L.g)
    local t = checked(redis.pcall('LRANGE', key, -(L.cap + 1), -1), key)
    L.t, L.more, L.got = t, #t > L.cap, 0
    L.avail = L.more and L.cap or math.min(L.cap, #t + #L.d)
  end
  -- Phase 3: rounds in window order, each lane up to its turn (then its weight). The lane
  -- served last remembers its last turn: the jobs it had of it (`taken`, counting what an
  -- earlier claim took of a continued turn) and whether need cut it short, in whichever round.
  local last = nil
  for r = 1, rounds do
    local moved = false
    for j = 1, #win do
      if need == 0 then break end
      local L = win[j]
      local quota = r == 1 and L.q or L.w
      local give = math.min(quota, L.avail - L.got, need)
      if give > 0 then
        L.got, need, moved, last = L.got + give, need - give, true, L
        L.cut, L.taken = give < quota, (r == 1 and L.used or 0) + give
      end
    end
    if need == 0 or not moved then break end
  end
  -- Phase 4: the jobs taken, the lists' pops, the ring and the turn. When need ran out, the
  -- ring entries after the last lane served keep their place (and that lane too when its
  -- turn was cut short: it stays at the front, the jobs it had of its turn in `gturn`), so the
  -- next claim goes on where this one stopped whatever its size: over claims of any n, the
  -- lanes are dealt the sequence of turns that claims of one job would deal.
  local popTo = pos
  if need == 0 and last and not last.outside then
    popTo = (last.cut and (last.more or #last.t + #last.d > last.got) and last.got < last.allow) and last.at - 1 or last.at
    if popTo < last.at then gp.turn = last.taken .. ' ' .. last.g end
  end
  local back = {} -- lanes to the back of the ring, in ring order: { lane, its walk position }
  for x = 1, #ringPush do back[#back + 1] = ringPush[x] end -- (blocked, from phase 1)
  ringPush = {}
  for j = 1, #win do
    local L = win[j]
    local t, d = L.t, L.d
    local fromList = math.min(L.got, #t)
    for i = #t, #t - fromList + 1, -1 do take[#take + 1] = t[i]; tlv[#take] = 0; tgr[#take] = L.g end
    for i = 1, L.got - fromList do take[#take + 1] = d[i]; tlv[#take] = 0; tgr[#take] = L.g end
    if L.got > 0 or #d > 0 then ops[#ops + 1] = { laneKey(L.g), 0, d, L.got, false } end
    if L.got > 0 and settings(L.g) > 0 then
      local ids = {}
      for i = #take - L.got + 1, #take do ids[#ids + 1] = take[i] end
      gp.adds[#gp.adds + 1] = { b .. 'gactive:' .. L.g, ids }
    end
    local rs = gp.rate[L.g]
    if rs then rs[4] = L.got end
    local has = L.more or #t + #d > L.got
    local blocked = has and L.got >= L.allow
    if has and not blocked then lrem = lrem + 1 end
    if blocked and L.why == 'rate' and (not gp.wait or rs[3] < gp.wait) then gp.wait = math.max(1, rs[3]) end
    if has and (L.at <= popTo or L.outside) then back[#back + 1] = { L.g, L.at, L.outside } end
  end
  table.sort(back, function(x, y) return x[2] < y[2] end)
  for x = 1, #back do
    if back[x][2] <= popTo or back[x][3] then ringPush[#ringPush + 1] = back[x][1] end
  end
  -- Due jobs of lanes outside the window: an empty list joins the ring as they land in it.
  for g, d in pairs(dueG) do
    local inWin = false
    for j = 1, #win do if win[j].g == g then inWin = true end end
    if not inWin and #d > 0 then
      local key = laneKey(g)
      local len = checked(redis.pcall('LLEN', key), key)
      ops[#ops + 1] = { key, 0, d, 0, false }
      if not seen[g] then -- (a blocked lane was walked: its place is kept or it went back)
        lrem = lrem + 1
        if len == 0 then ringPush[#ringPush + 1] = g end
      end
    end
  end
  st.lrem, st.ringPop, st.ringPush, st.need = lrem, popTo, ringPush, need
end
