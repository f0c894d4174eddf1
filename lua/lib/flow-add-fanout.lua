-- @requires fail types
-- flow-add.lua's fan-out mode (docs/flows.md, "Fanning out from a running job"): the running job
-- `jid` (its row `row`, in `active`) gets children. Fenced by its claim token: a stale holder
-- is refused and changes nothing, so a fan-out is never applied twice.

-- Before any write: the row and `active` are read; answers the row's status, token and deps
-- (cur), or nil when the caller does not hold the job's current claim. The children of an
-- earlier fan-out (`k:<child>` = "<queue> <policy> <key>") may not repeat in this call.
local function fanout_fence(row, active, token, jid, edgeOf, keys)
  local cur = checked(redis.pcall('HMGET', row, 'status', 'token', 'deps'), row)
  checked(redis.pcall('ZCARD', active), active)
  if token == '' then
    if cur[1] ~= 'waiting' then return nil end -- attach mode: a waiting parent only
  elseif cur[1] ~= 'active' or cur[2] ~= token then
    return nil
  end
  if cur[3] then
    local all = redis.call('HGETALL', row)
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 2) == 'k:' then
        local key = string.match(all[i + 1], '^[^ ]+ [^ ]+ (.*)$')
        if edgeOf[string.sub(all[i], 3)] or keys[jid .. ' ' .. key] then
          fail('BAD_ARG', 'a new child repeats the id or key of an earlier child (' .. key .. ')')
        end
      end
    end
  end
  return cur
end
-- The first writes: the running job becomes a waiting parent, out of `active`, its attempt
-- given back, `deps` raised by its `added` new children.
local function fanout_wait(row, active, jid, cur, added)
  redis.call('ZREM', active, jid)
  redis.call('HSET', row, 'status', 'waiting', 'deps', (tonumber(cur[3]) or 0) + added)
  redis.call('HINCRBY', row, 'attempts', -1)
end
