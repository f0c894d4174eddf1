-- A waiting flow parent's children still out (docs/flows.md): its row holds `k:<child>` = "<queue>
-- …" per child and `r:<child>` per outcome that arrived. Calls fn(child, queue) for each child
-- without an outcome, in the row's field order (cancel.lua and flow-deliver.lua cancel them).
local function each_child_out(row, fn)
  local all = redis.call('HGETALL', row)
  local have = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r:' then have[string.sub(all[i], 3)] = true end
  end
  for i = 1, #all, 2 do
    local cid = string.sub(all[i], 3)
    if string.sub(all[i], 1, 2) == 'k:' and not have[cid] then fn(cid, string.match(all[i + 1], '^[^ ]+')) end
  end
end
