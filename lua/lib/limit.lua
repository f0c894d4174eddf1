-- @requires fail
-- The bound of an operator's bulk call (drain, revive all): 1..1000 in canonical decimal (no
-- sign, no leading zero, at most 4 digits), or EMQ_BAD_ARG.
local function need_limit(s)
  if type(s) ~= 'string' or #s > 4 or not string.match(s, '^[1-9]%d*$') or tonumber(s) > 1000 then
    fail('BAD_ARG', 'limit must be 1..1000')
  end
  return tonumber(s)
end
