-- @requires fail int
-- A queue's policy as policy.lua validates it and claim reads it (docs/protocol.md §5, "Rate
-- limits" and "Group policy"): one parser for both, so the stored text is exactly what a claim
-- enforces.
-- policy_rate(max, ms): a rate limit of max jobs (1..1000000) per ms (1..86400000), or 0, 0 for
-- none; answers max, ms, or nil when the pair is out of range (or only one of them is 0).
local function policy_rate(max, ms)
  local m, w = int(max, 0, 1000000), int(ms, 0, 86400000)
  if not m or not w or (m == 0) ~= (w == 0) then return nil end
  return m, w
end
-- policy_rate_text(text): a stored rate (meta `rate`): "<max> <ms>" (a fixed window) or
-- "<max> <ms> sliding", max 1..1000000, ms 1..86400000; answers max, ms, sliding (a boolean), or
-- nil when the text is not one of these.
local function policy_rate_text(text)
  local max, ms, mode = string.match(text, '^(%d+) (%d+)(.*)$')
  if mode ~= '' and mode ~= ' sliding' then return nil end
  local m, w = policy_rate(max, ms)
  if not m or m == 0 then return nil end
  return m, w, mode == ' sliding'
end
-- policy_groups(spec): the group policy as pol[group] (or pol['*']) = { cap, weight, rate max,
-- rate ms, sliding }, and whether any entry has a cap. Space-separated entries
-- `<who>=<cap>,<weight>,<rate max>,<rate ms>[,sliding]`, who `*` (every group; required) or
-- `g:<group>` (one group; at most 1000 entries, 65536 bytes): at most cap jobs of a group active
-- at once (0 = no cap; 1..100000), weight jobs per turn of the rotation (1..1000), at most rate
-- max jobs per rate ms window (0,0 = none; 1..1000000 per 1..86400000), a fixed window unless
-- the entry ends `,sliding` (a sliding one: at most rate max in any rate ms; only with a rate).
-- EMQ_BAD_ARG otherwise.
local function policy_groups(spec)
  local pol, polCap, cnt = {}, false, 0
  need(#spec <= 65536, 'group policy is at most 65536 bytes')
  for tok in string.gmatch(spec, '%S+') do
    cnt = cnt + 1
    local who, c, w, r, ms, win = string.match(tok, '^([^=]+)=([^,]*),([^,]*),([^,]*),([^,]*)(.*)$')
    c, w, r, ms = int(c, 0, 100000), int(w, 1, 1000), int(r, 0, 1000000), int(ms, 0, 86400000)
    local g = who and (who == '*' and '*' or string.match(who, '^g:([A-Za-z0-9_.-]+)$'))
    if cnt > 1001 or not g or #g > 100 or not c or not w or not r or not ms or (r == 0) ~= (ms == 0) or pol[g]
      or (win ~= '' and (win ~= ',sliding' or r == 0)) then
      fail('BAD_ARG', 'group policy entry ' .. cnt .. ' must be <*|g:group>=<cap 0..100000>,<weight 1..1000>,<rate max 0..1000000>,<rate ms 0..86400000>[,sliding] (rate 0,0 = none; sliding only with a rate; each group once)')
    end
    pol[g] = { c, w, r, ms, win == ',sliding' }
    if c > 0 then polCap = true end
  end
  need(pol['*'], 'group policy needs the entry *=<cap>,<weight>,<rate max>,<rate ms>')
  return pol, polCap
end
-- policy_paused(text): the paused lanes (meta `gpaused`, policy.lua's `pause`: group names
-- separated by spaces) as a set, or nil when none is paused (absent or "").
local function policy_paused(text)
  if not text or text == '' then return nil end
  local set = {}
  for g in string.gmatch(text, '%S+') do set[g] = true end
  return set
end
