-- @requires fail
-- The key grammar (docs/protocol.md §2): every key a script is given must be the one the grammar
-- spells. A queue's keys share the base `emq:{<q>}:` (q a name: 1..100 of `A-Za-z0-9_.-`), read
-- from its meta key, KEYS[1]; keys a script reaches without declaring them are spelt from it too.
local function queue_base(meta)
  if type(meta) ~= 'string' or #meta > 110 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<queue>}:meta of a queue')
  end
  return string.sub(meta, 1, -5)
end
-- The base `emq:{<t>}:bus:` of a Bus topic's keys, from its meta key (KEYS[1]).
local function topic_base(meta)
  if type(meta) ~= 'string' or #meta > 114 or not string.find(meta, '^emq:{[A-Za-z0-9_.-]+}:bus:meta$') then
    fail('BAD_ARG', 'KEYS[1] must be the meta key emq:{<topic>}:bus:meta of a topic')
  end
  return string.sub(meta, 1, -5)
end
-- Checks keys[i] = base .. names[i] for i = from..#names (names[1] is the meta key's `meta`).
local function need_keys(keys, base, names, from)
  for i = from or 2, #names do
    if keys[i] ~= base .. names[i] then
      fail('BAD_ARG', 'KEYS must be the keys ' .. table.concat(names, ', ') .. ' of one queue, in this order (KEYS[' .. i .. '] is not)')
    end
  end
end
-- A declared row key must be the row (`<prefix><id>`) of its own id.
local function need_row(key, prefix, id)
  if key ~= prefix .. id then fail('BAD_ARG', 'the row key ' .. tostring(key) .. ' is not the row of ' .. id) end
end
