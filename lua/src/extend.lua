-- Extends the leases of one or many active jobs, each fenced by its token: a job whose lease was
-- lost (reaped, re-claimed, finished) is not extended. Every number is a decimal integer: no sign,
-- fraction, exponent or blank.
-- Flags: allow-oom. Its one write (ZADD XX) only updates the scores of members already in
-- `active`: it cannot grow memory, and refusing it under OOM would lose leases of running jobs.
--
-- @key meta emq:{q}:meta queue meta hash
-- @key active emq:{q}:active zset id -> lease deadline
-- @key rows emq:{q}:job: prefix of job rows
-- @key row* emq:{q}:job:<id> the row of job i, KEYS[3+i] for i = 1..n
-- @arg version version the protocol version
-- @arg lease 1..86400000 the new lease in ms from now
-- @arg n 1..1000 the number of jobs
-- @arg id* id:job per job i, ARGV[4+2(i-1)]: its id
-- @arg token* token per job i, ARGV[5+2(i-1)]: its fencing token (decimal digits)
-- @returns an array of n integers: 1 = extended (deadline = server now + lease), 0 = lease lost, 2 =
--   extended, and a cancel was requested (row `cancel` = 1): the holder should stop its handler
--   and end the attempt through retry.lua or release.lua (which end it `cancelled`), not
--   complete.lua.
-- @errors EMQ_VERSION, EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key
--   that is not the one the key grammar spells for the queue of KEYS[1], a row key that is not the
--   row of its id), EMQ_WRONGTYPE (a key holds another type), EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE.
--   Every check comes before the first write.
-- @flags allow-oom
-- @uses args ids keys types meta clock
need(#KEYS >= 3 and #ARGV >= 3, 'expected at least 3 keys and 3 arguments')
need_keys(KEYS, queue_base(KEYS[1]), { 'meta', 'active', 'job:' })
queue_meta(KEYS[1])
local lease = need_int(ARGV[2], 1, 86400000, 'the lease (ms)')
local n = need_int(ARGV[3], 1, 1000000000, 'the job count')
if n > 1000 then fail('BATCH_TOO_LARGE', 'at most 1000 jobs per call') end
need(#KEYS == 3 + n and #ARGV == 3 + 2 * n, 'expected ' .. n .. ' rows and ' .. (2 * n) .. ' job arguments')
for i = 1, n do
  local id = ARGV[4 + 2 * (i - 1)]
  if bad_id(id) then fail('BAD_ID', 'job ' .. i .. ' has a malformed id') end
  need_row(KEYS[3 + i], KEYS[3], id)
  need(string.match(ARGV[5 + 2 * (i - 1)], '^%d+$'), 'job ' .. i .. ' has a bad token')
end

local deadline = now_ms() + lease
local out, zargs = {}, {}
for i = 1, n do
  local id, token, row = ARGV[4 + 2 * (i - 1)], ARGV[5 + 2 * (i - 1)], KEYS[3 + i]
  local cur = checked(redis.pcall('HMGET', row, 'status', 'token', 'cancel'), row)
  if cur[1] == 'active' and cur[2] == token then
    zargs[#zargs + 1] = deadline
    zargs[#zargs + 1] = id
    out[i] = cur[3] == '1' and 2 or 1
  else
    out[i] = 0
  end
end
-- The only write, one command for the whole batch; refused with WRONGTYPE it changes nothing.
if #zargs > 0 then checked(redis.pcall('ZADD', KEYS[2], 'XX', unpack(zargs)), KEYS[2]) end
return out
