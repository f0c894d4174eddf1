-- @requires types
-- enqueue.lua's dedup modes (docs/protocol.md §5, enqueue, "Dedup modes"), given as one more
-- argument after the window: `w` (window) or `d` (debounce). Either mode also writes
-- `keyof:<id>` = the key (PX the window) for each job that takes a key, so that cancel.lua and
-- remove.lua free the key of the job they end. Without a mode argument none of this runs.

-- Debounce: whether the job `id` holding a key still waits for its first claim (its payload in
-- `data`, no row): answers 'scheduled' with its run-at, 'pending', or nil (it started, ended or
-- is gone: the new job is added and takes the key). Reads only.
local function dedup_holder_waits(b, K, id)
  local p = checked(redis.pcall('HGET', K[5], id), K[5])
  if not p or p == '' then return nil end
  if redis.call('EXISTS', b .. 'job:' .. id) == 1 then return nil end
  local at = checked(redis.pcall('ZSCORE', K[3], id), K[3])
  if at then return 'scheduled', tonumber(at) end
  return 'pending'
end
-- Debounce writes, after the new jobs': each waiting holder gets the repeat's payload, and a
-- holder still in `scheduled` the repeat's instant (now when the repeat has none); a holder made
-- earlier gets a wake marker (when `wake` is empty) so that idle consumers re-read their wait.
-- deb: { { id, payload, at, old run-at or nil }, … }.
local function dedup_debounce(K, deb, now)
  local wake = false
  for i = 1, #deb do
    local d = deb[i]
    redis.call('HSET', K[5], d[1], d[2])
    if d[4] then
      local at = d[3] > now and d[3] or now
      redis.call('ZADD', K[3], 'XX', at, d[1])
      if at < d[4] then wake = true end
    end
  end
  if wake and redis.call('LLEN', K[4]) == 0 then redis.call('LPUSH', K[4], '1') end
end
-- The key of each job that took one (and, in debounce mode, of each holder a repeat refreshed):
-- the key and its `keyof:<id>`, both PX the window.
local function dedup_hold(b, key, id, window)
  redis.call('SET', key, id, 'PX', window)
  redis.call('SET', b .. 'keyof:' .. id, string.sub(key, #b + 5), 'PX', window)
end
