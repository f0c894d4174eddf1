-- @requires fail
-- The coordination grammar (docs/protocol.md, "Coordination"): a lease or a semaphore is named by
-- a name of the key grammar (1..100 bytes of `A-Za-z0-9_.-`) under its own hash tag `co:<name>`,
-- `emq:{co:<name>}:lease` (hash) and `emq:{co:<name>}:sem` (zset). KEYS[1] must be the key of
-- `kind` (`lease` or `sem`), or EMQ_BAD_ARG; answers the name.
local function need_co_key(k, kind)
  local name = string.match(type(k) == 'string' and k or '', '^emq:{co:([A-Za-z0-9_.%-]+)}:' .. kind .. '$')
  if not name or #name > 100 then fail('BAD_ARG', 'KEYS[1] must be a key emq:{co:<name>}:' .. kind) end
  return name
end
-- A holder's identity (a lease's owner, a permit's holder): 1..64 bytes of printable ASCII
-- without spaces, or EMQ_BAD_ARG naming it.
local function need_holder(s, what)
  if type(s) ~= 'string' or #s < 1 or #s > 64 or not string.match(s, '^[!-~]+$') then
    fail('BAD_ARG', what .. ' must be 1..64 bytes of printable ASCII without spaces')
  end
  return s
end
-- A whole number of ms as its decimal text (never the `%.14g` form Lua's tostring gives a large one).
local function decimal(n)
  return string.format('%.0f', n)
end
