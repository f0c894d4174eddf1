-- @requires fail
-- Flows' outbox (docs/protocol.md §10): the cross-queue hand-offs a transition owes, written in
-- the same step to this queue's `outbox` (entry id -> text) and `outdue` (entry id -> due ms).
-- The optional trailing pair of keys of the transitions that may finish a flow job: nil, nil when
-- absent (i > #keys), else both checked against the grammar.
local function outbox_keys(keys, i, base)
  if keys[i] == nil then return nil, nil end
  if keys[i] ~= base .. 'outbox' or keys[i + 1] ~= base .. 'outdue' or keys[i + 2] ~= nil then
    fail('BAD_ARG', 'KEYS[' .. i .. '..' .. (i + 1) .. '] must be the outbox and outdue of the queue, last')
  end
  return keys[i], keys[i + 1]
end
-- The text of a `d:` entry: a finished job's outcome for its parent (`<queue> <id>`).
local function delivery_text(parent, id, outcome, text)
  return 'd ' .. parent .. ' ' .. id .. ' ' .. outcome .. ' ' .. text
end
-- Writes one entry, due at `at` (now for a relay to take; now + lease when leased to the caller).
local function hand_off(box, due, eid, text, at)
  redis.call('HSET', box, eid, text)
  redis.call('ZADD', due, at, eid)
end
