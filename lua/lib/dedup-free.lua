-- @requires types
-- Freeing a job's dedup key (docs/protocol.md §5, enqueue "Dedup modes"): an enqueue with a mode
-- argument wrote `keyof:<id>` = the key of each job that took one; cancel.lua and remove.lua
-- read it (dedup_key_of, before their first write) and, once they end the job, delete the key
-- when it still names this job, and the keyof (dedup_free). Jobs of an enqueue without a mode
-- have no keyof: nothing is freed, as before.

-- Reads only: answers { keyof key, dedup key or nil } or nil when the job has no keyof.
local function dedup_key_of(b, id)
  local kof = b .. 'keyof:' .. id
  local k = checked(redis.pcall('GET', kof), kof)
  if not k then return nil end
  local key = b .. 'key:' .. k
  local holder = checked(redis.pcall('GET', key), key)
  return { kof, holder == id and key or nil }
end
local function dedup_free(f)
  if not f then return end
  if f[2] then redis.call('DEL', f[2]) end
  redis.call('DEL', f[1])
end
