-- A name of the key grammar (docs/protocol.md §2): a queue, a lane group, a schedule, a flow
-- child's key: 1..100 bytes of `A-Za-z0-9_.-`. True when s is not one.
local function bad_name(s)
  return type(s) ~= 'string' or #s == 0 or #s > 100 or not string.match(s, '^[A-Za-z0-9_.-]+$')
end
