-- @requires version
-- Refusals. A script refuses by raising `EMQ_<CODE> <message>` (error level 0: no position in
-- the text); run() answers it as the error reply. A script that must write before its last check
-- (claim's pop-as-read) sets `on_refusal`, which run() calls before it answers the refusal.
local refusal_hook = nil
local function on_refusal(fn) refusal_hook = fn end
local function fail(code, msg) error('EMQ_' .. code .. ' ' .. msg, 0) end
-- Refuses with EMQ_BAD_ARG unless ok (a count, a shape, a mode that does not hold).
local function need(ok, msg) if not ok then fail('BAD_ARG', msg) end end
-- Refuses data of another protocol version than these scripts read (meta `v`, when present).
local function need_data_version(v, key)
  if v and not DATA_VERSIONS[v] then fail('VERSION', key .. ' holds protocol ' .. v .. ' data, script speaks ' .. PROTOCOL) end
end
