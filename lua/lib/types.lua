-- @requires fail
-- Key types: a key that holds another type than the protocol gives it is EMQ_WRONGTYPE, found
-- before the first write (Valkey does not roll a script back).
local function need_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then fail('WRONGTYPE', key .. ' is a ' .. t .. ', not a ' .. want) end
end
-- Several at once: a flat list key, type, key, type, …
local function need_types(list)
  for i = 1, #list, 2 do need_type(list[i], list[i + 1]) end
end
-- The reply of a command run through redis.pcall: WRONGTYPE becomes EMQ_WRONGTYPE naming the key,
-- any other error reply is raised as it is (OOM, NOPERM keep their codes); a reply passes.
local function checked(r, key)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) == 'WRONGTYPE' then fail('WRONGTYPE', key .. ' holds a value of another type than the protocol gives it') end
    error(r.err, 0)
  end
  return r
end
