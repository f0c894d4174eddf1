-- Claim's writes of rows that are not the plain claim's one HSET.
-- claim_row: the row of a claimed job with a level, a group or its own options (opts
-- "<max attempts>|<backoff>|<lane>|<extras>", moved into its row at its first claim: `max`,
-- `backoff` and extras as `x`; with `started` (attempt starts recorded), `started`). Answers the
-- extras it moved (nil when none).
local function claim_row(row, token, a, L, G, o, started)
  local r = { 'status', 'active', 'token', token, 'attempts', a }
  if started then r[#r + 1] = 'started'; r[#r + 1] = started end
  if L and L > 0 then r[#r + 1] = 'prio'; r[#r + 1] = L end
  if G then r[#r + 1] = 'group'; r[#r + 1] = G end
  local maxA, backoff = string.match(o or '', '^(%d*)|([^|]*)')
  if maxA and maxA ~= '' then r[#r + 1] = 'max'; r[#r + 1] = maxA end
  if backoff and backoff ~= '' then r[#r + 1] = 'backoff'; r[#r + 1] = backoff end
  local x = o and string.match(o, '^[^|]*|[^|]*|[^|]*|(.+)$')
  if x then r[#r + 1] = 'x'; r[#r + 1] = x end
  redis.call('HSET', row, unpack(r))
  return x
end
-- Ghosts popped (cancel.lua left the id pending, its payload in its row and "" in `data`): the
-- payload back to `data` (or, when its row left the cancelled retention, the "" dropped), one
-- ghost fewer in meta `ghosts`. ghosts: { { id, payload or false }, ... }.
local function claim_ghosts(KEYS, ghosts)
  for i = 1, #ghosts do
    local id, p = ghosts[i][1], ghosts[i][2]
    if p then
      redis.call('HSET', KEYS[6], id, p)
      redis.call('HDEL', KEYS[8] .. id, 'payload')
    else
      redis.call('HDEL', KEYS[6], id)
    end
  end
  redis.call('HINCRBY', KEYS[1], 'ghosts', -#ghosts)
end
