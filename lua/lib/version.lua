-- The protocol version this build speaks: every script is called with it as ARGV[1] and refuses
-- any other first (run.lua), before it looks at a count, a key or an argument.
local PROTOCOL = '1'
-- The versions of queue data (meta `v`) these scripts read; a queue whose data is of another
-- version is refused, so a runtime of one version never half-applies a transition to another's.
local DATA_VERSIONS = { ['1'] = true }
