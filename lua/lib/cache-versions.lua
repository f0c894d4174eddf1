-- @requires fail ids types
-- Cache versions (docs/cache.md, the version rule): 14-byte `ver` ids, newer mint wins.
-- True when version a sorts strictly before b (both 14 bytes), compared byte by byte: Lua's `<`
-- on strings follows the server's collation locale, not byte order.
local function older(a, b)
  for i = 1, 14 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
-- The version an entry hash holds (HGET `v`, WRONGTYPE checked; nil when absent), or
-- EMQ_VERSION when its `v` is not a version id (not this protocol's cache data).
local function entry_version(key)
  local v = checked(redis.pcall('HGET', key, 'v'), key)
  if v and bad_id(v, 'ver') then fail('VERSION', key .. ' is not protocol ' .. PROTOCOL .. ' cache data') end
  return v or nil
end
