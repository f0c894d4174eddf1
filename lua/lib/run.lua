-- @requires version fail
-- The runner every built script ends with (`return run(main)`): the version is checked before
-- anything else, so a caller of another version always hears EMQ_VERSION naming both versions;
-- then the script's body runs, and a refusal it raised (or a command's error) is its reply.
local function version_error(v)
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. PROTOCOL .. ', caller speaks ' .. string.sub(tostring(v), 1, 32))
end
-- A call's outcome as an error reply: the hook (if any) first, so a refusal still writes nothing.
local function refusal(r)
  if refusal_hook then local undo = refusal_hook; refusal_hook = nil; undo() end
  return redis.error_reply(type(r) == 'table' and tostring(r.err) or tostring(r))
end
local function run(main)
  if ARGV[1] ~= PROTOCOL then return version_error(ARGV[1]) end
  local ok, r = pcall(main, KEYS, ARGV)
  if ok then return r end
  return refusal(r)
end
