-- @requires fail int ids job-args names refs
-- enqueue.lua's arguments, all checked before its first read (docs/protocol.md §3). The forms
-- differ in the arguments per job and what follows the jobs: full (6 per job), compact (2 per
-- job: id, payload), lanes (full + one priority or group per job), extras (lanes + one extras
-- text per job), and with dedup keys (KEYS[8..7+n]) the window last. The compact form's
-- per-job check is the id and payload only. With business ids (the refs key emq:{q}:refs last in
-- KEYS) one more argument per job ends the call, after everything else: its business id or "".

-- Dedup keys: one `emq:{q}:key:<key>` per job (key 1..256 bytes, no control characters) and a
-- window of 1..2592000000 ms, the last argument, or the one before a mode (`w` window, `d`
-- debounce: a word, so it cannot be mistaken for a window). Answers the window and the mode.
local function enqueue_dedup_args(K, A, b, n, len, r)
  local mode = (A[len] == 'w' or A[len] == 'd') and A[len] or nil
  local window = int(A[len - (mode and 1 or 0)], 1, 2592000000)
  need(#K == 7 + n + r and window, 'dedup needs one key per job and a window of 1..2592000000 ms after the jobs')
  for i = 1, n do
    local k = K[7 + i]
    local bk = string.sub(k, #b + 5)
    if string.sub(k, 1, #b + 4) ~= b .. 'key:' or #bk == 0 or #bk > 256 or string.find(bk, '%c') then
      fail('BAD_ARG', 'key ' .. (7 + i) .. ' must be the queue\'s key: prefix and a dedup key of 1..256 bytes without control characters')
    end
  end
  return window, mode
end
-- Extras (A[5+7n .. 4+8n]): each job's text, or nil for "": a JSON object of 2..1024 bytes,
-- `t` an integer 1..86400000, `tp` a string of 1..256 bytes, `n` (the job's name) a string of
-- 1..128 bytes without control characters.
local function enqueue_extras(A, n)
  local ext = {}
  for i = 1, n do
    local x = A[4 + 7 * n + i]
    if x ~= '' then
      local ok, v = false, nil
      if #x >= 2 and #x <= 1024 and string.sub(x, 1, 1) == '{' then ok, v = pcall(cjson.decode, x) end
      local o = ok and type(v) == 'table' and v or {}
      local tm, tp, nm = o.t, o.tp, o.n
      if not ok or type(v) ~= 'table' or (tm ~= nil and (type(tm) ~= 'number' or tm ~= math.floor(tm) or tm < 1 or tm > 86400000))
        or (tp ~= nil and (type(tp) ~= 'string' or #tp == 0 or #tp > 256))
        or (nm ~= nil and (type(nm) ~= 'string' or #nm == 0 or #nm > 128 or string.find(nm, '%c'))) then
        fail('BAD_ARG', 'job ' .. i .. ' has bad extras (a JSON object of 2..1024 bytes; t 1..86400000, tp a string of 1..256 bytes, n a name of 1..128 bytes without control characters)')
      end
      ext[i] = x
    end
  end
  return ext
end
-- Lanes (A[5+6n .. 4+7n]): each job's priority 0..9 ("" = 0), or `g:<group>` (a fair lane; its
-- priority 0). Answers pri (job -> level) and grp (job -> group or nil).
local function enqueue_lanes_args(A, n)
  local pri, grp = {}, {}
  for i = 1, n do
    local p = A[4 + 6 * n + i]
    local g = string.match(p, '^g:(.*)$')
    if g then
      if bad_name(g) then fail('BAD_ARG', 'job ' .. i .. ' has a bad group (1..100 of A-Z a-z 0-9 _ . -)') end
      grp[i] = g
      pri[i] = 0
    else
      pri[i] = p == '' and 0 or int(p, 0, 9)
      if not pri[i] then fail('BAD_ARG', 'job ' .. i .. ' has a bad priority (0..9, "" = 0) or group (g:<name>)') end
    end
  end
  return pri, grp
end
-- All of it, in the order the checks have always run. Answers a table: n, S (arguments per
-- job: 2 compact, 6 otherwise), keyed, window, prio (lanes given), pri, grp, ext (extras given),
-- setLog (the events log length to record, or nil), ids, refs (job -> business id, when the refs
-- key is given).
local function enqueue_args(K, A, b)
  local maxBytes, n = int(A[2], 1, 536870912), int(A[3], 1, 1000000000)
  need(maxBytes and n, 'the payload limit must be an integer in 1..536870912 and the job count an integer >= 1')
  if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 jobs per call') end
  -- Business ids: the refs key last (a dedup key is never it), and the last n arguments.
  local r = #K > 7 and K[#K] == b .. 'refs' and 1 or 0
  local len = #A - r * n
  local c = { n = n, keyed = #K > 7 + r }
  if r == 1 then
    need(len >= 4, 'business ids need one argument per job, last')
    c.refs = {}
    for i = 1, n do
      local ref = A[len + i]
      if ref ~= '' then
        if bad_ref(ref) then fail('BAD_ARG', 'job ' .. i .. ' has a bad business id (1..200 bytes, no control characters, not of the branded id form)') end
        c.refs[i] = ref
      end
    end
  end
  if c.keyed then c.window, c.mode = enqueue_dedup_args(K, A, b, n, len, r) end
  local tail = c.keyed and (c.mode and 2 or 1) or 0 -- the dedup window (and mode), last
  local xtra = len == 4 + 8 * n + tail -- extras come after the lanes
  c.prio = xtra or len == 4 + 7 * n + tail
  -- The compact form: two arguments per job (id, payload), every other field its default.
  local S = len == 4 + 2 * n + tail and 2 or 6
  if len ~= 4 + 6 * n + tail and not c.prio and S ~= 2 then
    fail('BAD_ARG', 'expected 7 keys and ' .. (6 * n) .. ' job arguments (or ' .. (2 * n) .. ' in the compact form, ' .. (7 * n) .. ' with priorities, ' .. (8 * n) .. ' with extras)' .. (c.keyed and ', then the dedup window (and mode)' or '') .. (r == 1 and ', then one business id per job' or ''))
  end
  c.S = S
  if xtra then c.ext = enqueue_extras(A, n) end
  if c.prio then c.pri, c.grp = enqueue_lanes_args(A, n) end
  if A[4] ~= '' then
    c.setLog = int(A[4], 0, 1000000)
    need(c.setLog, 'lifecycle-log length must be 0..1000000')
  end
  local ids = {}
  for i = 1, n do
    local j = 4 + S * (i - 1)
    local id = A[j + 1]
    if bad_id(id) then fail('BAD_ID', 'job ' .. i .. ' has a malformed id') end
    need_payload(A[j + 2], maxBytes, 'job', i)
    if S == 6 then
      if not int(A[j + 3], 0, 315360000000) or not int(A[j + 4], 0, 7258118400000) then
        fail('BAD_ARG', 'job ' .. i .. ' has a bad delay (0..315360000000 ms) or run-at (0..7258118400000)')
      end
      need_job_opts(A[j + 5], A[j + 6], 'job', i)
    end
    ids[i] = id
  end
  c.ids = ids
  return c
end
