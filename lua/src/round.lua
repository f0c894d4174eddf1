-- One consumer round in one atomic call: complete.lua, then claim.lua, on ONE queue (docs/protocol.md
-- §5, "Round"). Composed by the build (`@compose complete claim`): each part is its script's
-- body, run as a local function whose KEYS and ARGV are its own; the fragments are in the file
-- once, and their per-call memos, the queue's meta read (queue_meta) and the server clock
-- (now_ms), are shared by both parts: each is read once per call (the complete part writes no
-- meta field; the clock is fixed for a whole script call). Each part validates all its own inputs
-- before its own first write, and its reply is what that script answers. A claim part refused
-- after the complete part wrote leaves the completions done (as the two calls pipelined would).
-- The driver's arguments come last: the complete part then runs on the call's own KEYS and ARGV,
-- cut to its entries, without a copy.
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: allow-oom, as its parts: it moves work forward and frees memory.
--
-- @key complete* emq:{q}:… KEYS[1..c]: complete.lua's KEYS
-- @key claim* emq:{q}:… KEYS[c+1..]: claim.lua's KEYS; KEYS[c+1] must be KEYS[1] (the same
--   queue's meta: one slot)
-- @arg version version ARGV[1], complete.lua's version: checked first (a caller of another
--   version hears EMQ_VERSION for the whole call)
-- @arg complete* complete ARGV[2..a]: the rest of complete.lua's ARGV
-- @arg claim* claim ARGV[a+1..m-3]: claim.lua's ARGV (m = #ARGV), its version first (another
--   version refuses the claim part only, as { "E", EMQ_VERSION … })
-- @arg round-version version ARGV[m-2]: the driver's protocol version
-- @arg c 1..9999999 ARGV[m-1]: the number of complete keys (1 .. #KEYS-1)
-- @arg a 1..9999999 ARGV[m]: the number of complete arguments (1 .. m-4)
-- @returns { complete reply, claim reply }; a part refused (an EMQ_ refusal, or an error reply it
--   answers) has it encoded as { "E", <error text> } (both scripts' replies start with an
--   integer, so "E" is unambiguous), so the other part's reply is never lost. A Lua runtime
--   error that is not an EMQ_ refusal fails the whole call, as it would fail that script (a
--   claim part's pop-as-read is undone first, as claim.lua does).
-- @errors EMQ_VERSION (ARGV[1] or the driver's version), EMQ_BAD_ARG (too few keys or arguments,
--   a split count that is not a decimal integer in range, the parts naming different queues);
--   checked before either part runs.
-- @flags allow-oom
-- @uses fail
-- @compose complete claim
local nK, nA = #KEYS, #ARGV
need(nK >= 2 and nA >= 5, 'expected at least 2 keys and 5 arguments')
local v, c, a = ARGV[nA - 2], ARGV[nA - 1], ARGV[nA]
if v ~= PROTOCOL then return version_error(v) end
need(#c <= 7 and #a <= 7 and string.find(c .. ' ' .. a, '^%d+ %d+$'), 'the split counts must be decimal integers')
c, a = c + 0, a + 0
if c < 1 or c >= nK then fail('BAD_ARG', 'the complete key count must be 1..' .. (nK - 1)) end
if a < 1 or a > nA - 4 then fail('BAD_ARG', 'the complete argument count must be 1..' .. (nA - 4)) end
need(KEYS[c + 1] == KEYS[1], 'both parts must name the same queue (KEYS[1] and KEYS[c+1], its meta)')
-- The claim part gets two small new tables; the complete part the call's own KEYS and ARGV with
-- the claim part's entries and the driver's three arguments cut off (no copy of its per-job
-- keys and arguments). (Table constructors: a table grown one entry at a time is resized at
-- every power of two.)
local ck, ca = { unpack(KEYS, c + 1, nK) }, { unpack(ARGV, a + 1, nA - 3) }
for i = nK, c + 1, -1 do KEYS[i] = nil end
for i = nA, a + 1, -1 do ARGV[i] = nil end
-- A part's outcome: its reply; its refusal (fail(), or an error reply it answers) as
-- { "E", text }, after the refusal hook it set (refusal(): the claim part's pop-as-read undone).
-- Any other error (a Lua runtime error) fails the whole call: run() answers it, hook first.
local function part(fn, keys, argv)
  local ok, r = pcall(fn, keys, argv)
  if ok then
    if type(r) == 'table' and r.err then return { 'E', r.err } end
    return r
  end
  local text = type(r) == 'table' and r.err or r
  if type(text) ~= 'string' or string.sub(text, 1, 4) ~= 'EMQ_' then error(r, 0) end
  return { 'E', refusal(r).err }
end
local out = { part(complete_part, KEYS, ARGV), false }
-- run() checked ARGV[1], the complete part's version; the claim part's is its own first argument.
if ca[1] ~= PROTOCOL then out[2] = { 'E', version_error(ca[1]).err } else out[2] = part(claim_part, ck, ca) end
return out
