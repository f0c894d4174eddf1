-- @requires fail
-- The cache's key grammar (docs/protocol.md §2): a namespace is a name (1..100 bytes of
-- `A-Za-z0-9_.-`); a cache key or tag is 1..512 bytes of printable ASCII without space and braces
-- (0x21..0x7a, `|`, `~`: the runtimes' assertCacheKey). An entry and its fill lease carry the
-- key's own hash tag, `emq:{c:<ns>:<key>}:entry|lease`; a namespace's keys share
-- `emq:{<ns>}:cache:` (`log`, `signal`, `tag:<tag>`, `mark:<tag>`).
local function cache_key_ok(s)
  return type(s) == 'string' and #s >= 1 and #s <= 512 and string.find(s, '^[!-z|~]+$') ~= nil
end
-- A cache key argument, or EMQ_BAD_NAME naming it.
local function need_cache_key(s, what)
  if not cache_key_ok(s) then fail('BAD_NAME', what .. ' must be 1..512 printable ASCII characters without spaces or braces') end
  return s
end
-- The hash tag `c:<ns>:<key>` of an entry (kind `entry`) or lease (`lease`) key, or EMQ_BAD_ARG.
-- One match (the key's class already excludes the braces), on cache-get's hot path.
local ENTRY_KEY = { entry = '^emq:{c:[A-Za-z0-9_.%-]+:[!-z|~]+}:entry$', lease = '^emq:{c:[A-Za-z0-9_.%-]+:[!-z|~]+}:lease$' }
local function need_entry_key(k, kind, i)
  local tag = type(k) == 'string' and string.find(k, ENTRY_KEY[kind]) and string.sub(k, 6, -#kind - 3)
  if tag and #tag > 104 then -- shorter, neither the namespace (100) nor the key (512) can be too long
    local ns = #string.match(tag, '^c:([^:]*)')
    if ns > 100 or #tag - 3 - ns > 512 then tag = nil end
  end
  if not tag then fail('BAD_ARG', 'KEYS[' .. i .. '] must be a cache ' .. kind .. ' key emq:{c:<ns>:<key>}:' .. kind) end
  return tag
end
-- The namespace (and, for kind `tag:`/`mark:`, the tag) of a namespace key
-- `emq:{<ns>}:cache:<kind>[<tag>]`, or EMQ_BAD_ARG naming KEYS[i].
local function need_ns_key(k, kind, i)
  local ns, tag = string.match(type(k) == 'string' and k or '', '^emq:{([A-Za-z0-9_.%-]+)}:cache:' .. kind .. '(.*)$')
  local tagged = string.sub(kind, -1) == ':'
  if not ns or #ns > 100 or (tagged and not cache_key_ok(tag)) or (not tagged and tag ~= '') then
    local what = tagged and string.sub(kind, 1, -2) or kind
    fail('BAD_ARG', 'KEYS[' .. i .. '] is not a cache namespace ' .. what .. ' emq:{<ns>}:cache:' .. kind .. (tagged and '<tag>' or ''))
  end
  return ns, tag
end
