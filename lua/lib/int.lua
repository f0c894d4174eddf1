-- A decimal integer in [lo, hi], or nil: an optional `-`, at most 16 digits; refuses NaN, inf,
-- fractions, exponents, `+`, hex and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
