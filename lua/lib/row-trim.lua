-- @requires refs
-- Trimming a bounded set of finished jobs (the morgue, the cancelled set: id -> when): the oldest
-- beyond `keep` go, with their rows and payloads, at most 1000 per call (bounded work). With
-- `ghosts`, a payload of "" (a ghost's marker, cancel.lua) stays, so claim still recognises its
-- id (and an enqueue of it is still refused) until claim pops it. `refs`: the queue uses business
-- ids (meta `refs`), their mappings go with the rows; nil = not known, read from meta (only when
-- rows go).
local function trim_rows(set, data, prefix, keep, ghosts, refs)
  local excess = math.min(redis.call('ZCARD', set) - keep, 1000)
  if excess <= 0 then return end
  local old = redis.call('ZPOPMIN', set, excess)
  local b, gone = string.sub(prefix, 1, -5), {}
  for i = 1, #old, 2 do
    redis.call('DEL', prefix .. old[i])
    if not ghosts or redis.call('HGET', data, old[i]) ~= '' then redis.call('HDEL', data, old[i]) end
    gone[#gone + 1] = old[i]
  end
  if refs == nil then refs = redis.call('HGET', b .. 'meta', 'refs') == '1' end
  refs_drop(b, gone, refs)
end
