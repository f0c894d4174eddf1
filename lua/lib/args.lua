-- @requires fail int
-- The argument reader: each takes the argument, its range and its name, and answers the value or
-- refuses with EMQ_BAD_ARG naming the argument and what it must be.
local function need_int(s, lo, hi, what)
  local v = int(s, lo, hi)
  if not v then fail('BAD_ARG', what .. ' must be a decimal integer in ' .. lo .. '..' .. hi) end
  return v
end
-- A text argument of lo..hi bytes.
local function need_bytes(s, lo, hi, what)
  if type(s) ~= 'string' or #s < lo or #s > hi then fail('BAD_ARG', what .. ' must be ' .. lo .. '..' .. hi .. ' bytes') end
  return s
end
-- One of a set of words, given as a table word -> true.
local function need_word(s, words, what)
  if not words[s] then
    local list = {}
    for w in pairs(words) do list[#list + 1] = w end
    table.sort(list)
    fail('BAD_ARG', what .. ' must be one of ' .. table.concat(list, ', '))
  end
  return s
end
-- A fencing token: decimal digits, at most 20.
local function need_token(s)
  if type(s) ~= 'string' or #s > 20 or not string.match(s, '^%d+$') then fail('BAD_ARG', 'bad token') end
  return s
end
