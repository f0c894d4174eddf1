-- The anchor of `active` (docs/protocol.md §2): a member at score +inf that keeps the zset in
-- skiplist encoding. Every script that adds to `active` adds it with the job (claim.lua, and
-- enqueue.lua's lease to a parked consumer); it is never a job.
local ANCHOR = '~ EchoMQ anchor: keeps this zset in skiplist encoding; score +inf, never a job ~'
