-- @requires fail
-- A job's attempt history: the row's `hist` (docs/protocol.md §3, "Attempt history"), the ended
-- attempts that did not complete, oldest first, the newest HIST_KEEP kept. A record is
-- `<n>:<body>` (n = the body's bytes, decimal), its body seven fields, each `<n>:<bytes>`:
-- attempt, started (epoch ms, "" unknown), ended (epoch ms), outcome, worker, error, stack.
-- Written only on the failure paths (retry, reap): the happy path never reads or writes it.
local HIST_KEEP, HIST_ERROR, HIST_WORKER, HIST_STACK = 10, 1024, 128, 2048
-- A text cut to at most n bytes, never inside a UTF-8 sequence (a cut continuation run goes).
local function utf8_cut(s, n)
  if #s <= n then return s end
  local p, stop = n + 1, math.max(1, n - 2)
  while p > stop do
    local c = string.byte(s, p)
    if c < 0x80 or c >= 0xC0 then break end
    p = p - 1
  end
  return string.sub(s, 1, p - 1)
end
-- The optional worker and stack arguments of retry: the worker 0..HIST_WORKER bytes with no
-- control character, the stack 0..HIST_STACK bytes (any bytes: it is length-prefixed).
local function need_attempt_args(worker, stack)
  if worker ~= nil and (#worker > HIST_WORKER or string.find(worker, '%c')) then
    fail('BAD_ARG', 'the worker must be 0..' .. HIST_WORKER .. ' bytes without control characters')
  end
  if stack ~= nil and #stack > HIST_STACK then fail('BAD_ARG', 'the stack must be 0..' .. HIST_STACK .. ' bytes') end
end
-- The start of each record of a history text, or nil when it is not a sequence of records.
local function hist_starts(h)
  local starts, pos = {}, 1
  while pos <= #h do
    local len = string.match(h, '^(%d%d?%d?%d?%d?%d?):', pos)
    if not len then return nil end
    starts[#starts + 1] = pos
    pos = pos + #len + 1 + tonumber(len)
    if pos > #h + 1 then return nil end
  end
  return starts
end
local function hist_field(s) return #s .. ':' .. s end
-- The row's history with one more record (the oldest beyond HIST_KEEP dropped). A history that
-- is not a sequence of records (written by hand) starts over: the record is never lost to it.
local function hist_push(h, attempt, started, ended, outcome, worker, err, stack)
  local st = started and string.match(started, '^%d+$') or '' -- a planted start is not copied
  local body = hist_field(tostring(attempt)) .. hist_field(st) .. hist_field(tostring(ended))
    .. hist_field(outcome) .. hist_field(worker or '') .. hist_field(utf8_cut(err or '', HIST_ERROR))
    .. hist_field(stack or '')
  local rec = #body .. ':' .. body
  local starts = h and hist_starts(h)
  if not starts then return rec end
  if #starts < HIST_KEEP then return h .. rec end
  return string.sub(h, starts[#starts - HIST_KEEP + 2]) .. rec
end
