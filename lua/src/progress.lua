-- A running handler's checkpoint, progress or log line, fenced by its claim token: a holder whose
-- lease was lost (reaped, re-claimed, finished) is refused and writes nothing. Each lands in the
-- job's row, so it lives and goes with the row: `ckpt` (the checkpoint: JSON text the next attempt
-- starts with), `progress` (JSON text) and `log` (a JSON array of the newest lines, at most the
-- given count). Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Flags: none. It grows a row (a checkpoint of up to 512 MiB), so it must be refused under OOM;
-- without a shebang a legacy script is refused there at its first write, which is that HSET.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key rows emq:{q}:job: prefix of job rows
-- @key row emq:{q}:job:<id> the job's row
-- @arg version version the protocol version
-- @arg id id:job the job
-- @arg token token the fencing token (decimal digits)
-- @arg what c|p|l "c" checkpoint, "p" progress, "l" log line
-- @arg value text for "c" JSON text of 1..ARGV[6] bytes; for "p" JSON text of 1..4096 bytes; for
--   "l" a line of 1..4096 bytes
-- @arg limit limit for "c": the largest checkpoint in bytes (1..536870912); for "l": the most
--   lines kept (1..1000, the oldest go first); for "p": ignored (any decimal integer)
-- @returns 1 written; 0 refused (the row is not `active` under this token: stale holder).
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the
--   one the key grammar spells for the queue of KEYS[1], KEYS[3] not the row of the id, a value
--   out of its bounds), EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes before the first write.
-- @uses args ids keys types meta
need(#KEYS == 3 and #ARGV == 6, 'expected 3 keys and 6 arguments')
local id, token, what, value = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'job:' })
need_id(id)
need_row(KEYS[3], KEYS[2], id)
need_token(token)
need_word(what, { c = true, p = true, l = true }, 'what')
local limit
if what == 'c' then
  limit = need_int(ARGV[6], 1, 536870912, 'the checkpoint limit')
elseif what == 'l' then
  limit = need_int(ARGV[6], 1, 1000, 'the log line count')
else
  need(string.match(ARGV[6], '^%d+$') and int(ARGV[6], 0, 9007199254740991), 'ARGV[6] must be a decimal integer')
end
local max = what == 'c' and limit or 4096
need(#value > 0 and #value <= max, 'the value must be 1..' .. max .. ' bytes, got ' .. #value)
queue_meta(KEYS[1])
local row = KEYS[3]
local cur = checked(redis.pcall('HMGET', row, 'status', 'token', 'log'), row)
if cur[1] ~= 'active' or cur[2] ~= token then return 0 end
if what == 'c' then
  redis.call('HSET', row, 'ckpt', value)
elseif what == 'p' then
  redis.call('HSET', row, 'progress', value)
else
  -- A log written by another runtime that is not a JSON array starts over.
  local ok, lines = pcall(cjson.decode, cur[3] or '[]')
  if not ok or type(lines) ~= 'table' then lines = {} end
  lines[#lines + 1] = value
  local drop = #lines - limit
  if drop > 0 then
    local kept = {}
    for i = drop + 1, #lines do kept[#kept + 1] = lines[i] end
    lines = kept
  end
  redis.call('HSET', row, 'log', cjson.encode(lines))
end
return 1
