-- @requires fail types
-- Claim, lanes mode, level 0 without a group policy: fair lanes (docs/protocol.md §5). The ring
-- `groups` (a list, its RPOP end served next) names the lanes with pending work: a group (its
-- list `group:<g>`) or "" (`pending`, the jobs without a group). One claim serves the next
-- `need` lanes of the ring one job per lane per round, then moves them to the back: a lane with
-- work gets a job within the next G claimed jobs (G = the lanes with work). Ring entries are
-- hints: an empty lane is dropped when it comes up.
-- Pop-as-read: one RPOP per lane of the window takes its oldest q ids (q = a fair share of
-- need), the read and the pop in one command. The lanes whose pop took all q may hold more: one
-- EXISTS over them tells (one per lane only when some lane ended exactly empty). What a lane
-- took beyond what the rounds give it goes back (RPUSH, with the writes); a refusal after the
-- first pop pushes every popped id back first (on_refusal), so a refused claim changes nothing.
-- st is the lanes state of claim-lanes.lua: this adds to st.take/st.tgr, st.lrem, st.ringPop,
-- st.ringPush and the level-0 lane writes st.lwk/lwd/lwp/lwn.
local function claim_fair_lanes(st, KEYS, b)
  local ringKey, need, dueG, take, tgr, ringPush = st.ringKey, st.need, st.dueG, st.take, st.tgr, st.ringPush
  local lrem, none = st.lrem, {}
  local ring = redis.pcall('LRANGE', ringKey, -(need + 1), -1)
  if ring.err then checked(ring, ringKey) end
  local win, inWin = {}, {}
  local ringPop = math.min(need, #ring)
  for i = #ring, #ring - ringPop + 1, -1 do
    if not inWin[ring[i]] then inWin[ring[i]] = true; win[#win + 1] = ring[i] end
  end
  if #ring > ringPop then lrem = lrem + 1 end -- lanes beyond this claim's window
  local wholeRing = #ring <= need
  if wholeRing and not inWin[''] then inWin[''] = true; win[#win + 1] = '' end -- jobs without a group, not in the ring
  for g, d in pairs(dueG) do
    if not inWin[g] and #d > 0 then win[#win + 1] = g; inWin[g] = 'due' end
  end
  -- (Parallel arrays and one key spelt per lane: this loop runs once per lane of the window.)
  local nw, gpre = #win, b .. 'group:'
  local q = math.ceil(need / math.max(1, nw))
  if q == 1 and nw == need and not wholeRing and not next(dueG) then
    -- The steady state (a ring longer than need, no repeated hint, no due job): each lane of
    -- the window gives its oldest id, in window order, in one pass; one EXISTS over the lanes
    -- that gave tells which go to the back of the ring (an emptied one is gone, and dropped).
    local nk, pk, np = #take, {}, 0
    local base = nk
    on_refusal(function() for x = 1, np do redis.call('RPUSH', pk[x], take[base + x]) end end)
    for j = 1, nw do
      local g = win[j]
      local key = g == '' and KEYS[2] or gpre .. g
      local r = redis.pcall('RPOP', key)
      if r then
        if type(r) == 'table' then checked(r, key) end
        np, nk = np + 1, nk + 1
        pk[np], take[nk], tgr[nk] = key, r, g
      end
    end
    if np > 0 then
      local all = redis.call('EXISTS', unpack(pk)) == np
      for x = 1, np do
        if all or redis.call('EXISTS', pk[x]) == 1 then lrem = lrem + 1; ringPush[#ringPush + 1] = tgr[base + x] end
      end
    end
  else
    -- The general case: rounds over the window (a short ring, repeated hints, due jobs).
    local lk, tails, total, got, act, na, more, full = {}, {}, {}, {}, {}, 0, {}, {}
    on_refusal(function()
      for j = 1, #tails do
        local t = tails[j]
        if #t > 0 then
          local back = {}
          for i = #t, 1, -1 do back[#back + 1] = t[i] end
          redis.call('RPUSH', lk[j], unpack(back))
        end
      end
    end)
    for j = 1, nw do
      local g = win[j]
      local key = g == '' and KEYS[2] or gpre .. g
      local t
      if inWin[g] == 'due' or q == 0 then
        -- Outside the ring, with due jobs only (or nothing to claim): gives nothing now; its
        -- length says whether work remains and whether the lane joins the ring as they land.
        local len = redis.pcall('LLEN', key)
        if type(len) == 'table' then checked(len, key) end
        t, more[j] = {}, len > 0
      elseif q == 1 then
        local r = redis.pcall('RPOP', key)
        if type(r) == 'table' then checked(r, key) end
        t = r and { r } or {}
      else
        t = redis.pcall('RPOP', key, q)
        if t and t.err then checked(t, key) end
        t = t or {}
      end
      lk[j], tails[j], got[j] = key, t, 0
      if q > 0 and #t == q and inWin[g] ~= 'due' then full[#full + 1] = j end
    end
    if #full > 0 then
      local keys = {}
      for x = 1, #full do keys[x] = lk[full[x]] end
      local all = redis.call('EXISTS', unpack(keys)) == #full
      for x = 1, #full do more[full[x]] = all or redis.call('EXISTS', keys[x]) == 1 end
    end
    for j = 1, nw do
      local tot = more[j] and q or #tails[j] + #(dueG[win[j]] or none)
      total[j] = tot
      if tot > 0 and inWin[win[j]] ~= 'due' then na = na + 1; act[na] = j end
    end
    -- One job per lane per round, in window order, until need runs out (act: the lanes that can
    -- still give, compacted in place).
    while need > 0 and na > 0 do
      local m = 0
      for x = 1, na do
        if need == 0 then break end
        local j = act[x]
        local gj = got[j] + 1
        got[j], need = gj, need - 1
        if gj < total[j] then m = m + 1; act[m] = j end
      end
      na = m
    end
    local nk = #take
    local lwk, lwd, lwp, lwn = {}, {}, {}, 0
    for j = 1, nw do
      local g, d, t, gj = win[j], dueG[win[j]] or none, tails[j], got[j]
      local nt, nd = #t, #d
      local fromList = gj < nt and gj or nt
      for i = 1, fromList do nk = nk + 1; take[nk] = t[i]; tgr[nk] = g end
      local fromDue = gj - fromList
      for i = 1, fromDue do nk = nk + 1; take[nk] = d[i]; tgr[nk] = g end
      local left = (more[j] and 1 or 0) + nt - fromList + nd - fromDue
      lrem = lrem + left
      -- A lane left with work: its untaken pops back to its RPOP end, its untaken due jobs to
      -- the other. (A lane that ends empty is gone already: Valkey drops an emptied list.)
      if nt > fromList or nd > fromDue then
        local back, dl = false, false
        if nt > fromList then
          back = {}
          for i = nt, fromList + 1, -1 do back[#back + 1] = t[i] end
        end
        if nd > fromDue then
          dl = {}
          for i = fromDue + 1, nd do dl[#dl + 1] = d[i] end
        end
        lwn = lwn + 1
        lwk[lwn], lwd[lwn], lwp[lwn] = lk[j], dl, back
      end
      -- Back into the ring: a served lane that has work left, a lane from outside the ring
      -- (jobs without a group, or a group whose due jobs land in an empty list).
      if left > 0 and (inWin[g] == true or wholeRing or (nt == 0 and not more[j])) then ringPush[#ringPush + 1] = g end
    end
    st.lwk, st.lwd, st.lwp, st.lwn = lwk, lwd, lwp, lwn
  end
  st.lrem, st.ringPop, st.need = lrem, ringPop, need
end
