-- @requires fail types clock outbox
-- What a transition owes a flow (docs/flows.md): a job whose row names a parent and that ends
-- without completing hands its outcome to the parent's queue through this queue's outbox.
-- The outbox pair is required when a hand-off is owed (`why` says why); its types are checked.
local function need_outbox(box, due, why)
  if not box then fail('BAD_ARG', why .. ': the outbox and outdue keys are required') end
  need_types({ box, 'hash', due, 'zset' })
end
-- The hand-off `d:<id>` = "d <parent> <id> <outcome> <text>", due now.
local function tell_parent(box, due, parent, id, outcome, text)
  hand_off(box, due, 'd:' .. id, delivery_text(parent, id, outcome, text), now_ms())
end
