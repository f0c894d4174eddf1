-- @requires fail
-- The 14-byte gate (docs/protocol.md §1): a 3-letter namespace, 11 base62 digits, the body at
-- most 2^64-1 (`LygHa16AHYF`). Compared byte by byte: Lua's `>` on strings follows the server's
-- collation locale, not byte order.
local ID_MAX = 'LygHa16AHYF'
local ID_PATTERN = { job = '^job[0-9A-Za-z]+$', evt = '^evt[0-9A-Za-z]+$', ver = '^ver[0-9A-Za-z]+$' }
local function bad_id(id, ns)
  if type(id) ~= 'string' or #id ~= 14 or not string.match(id, ID_PATTERN[ns or 'job']) then return true end
  local first = string.byte(id, 4)
  if first ~= 76 then return first > 76 end -- 'L', the first digit of the bound: most ids differ there
  for i = 2, 11 do
    local x, y = string.byte(id, i + 3), string.byte(ID_MAX, i)
    if x ~= y then return x > y end
  end
  return false
end
-- An id of namespace ns (default `job`), or EMQ_BAD_ID.
local function need_id(id, ns)
  if bad_id(id, ns) then fail('BAD_ID', 'malformed ' .. (ns or 'job') .. ' id') end
  return id
end
