-- dead-letter.lua: EchoMQ protocol v1. (Being written: see docs/bus.md.)
--
-- Returns: an error until implemented.
return redis.error_reply('EMQ_BAD_ARG dead-letter.lua is not implemented yet')
