-- @requires fail types
-- Business ids (docs/protocol.md §2, §3): the hash emq:{q}:refs holds both directions of a
-- queue's business ids: field <business id> -> the job's wire id, and field <wire id> -> its
-- business id. A business id never has the branded form (`job` and 11 base62 digits, 14 bytes),
-- so the two kinds of field never meet. Meta `refs` = 1 once a queue has used one: until then
-- the scripts that end jobs read nothing more. The hash is spelt from the queue's base (same slot).

-- A business id as enqueue.lua takes it: 1..200 bytes, no control characters, not of the branded
-- form. True when `r` is not one.
local function bad_ref(r)
  return type(r) ~= 'string' or #r == 0 or #r > 200 or string.find(r, '%c') ~= nil
    or (#r == 14 and string.match(r, '^job[0-9A-Za-z]+$') ~= nil)
end
-- Drops the business ids of the jobs `ids` (their rows deleted by the caller), when the queue
-- uses business ids (`on`): both fields of each, the forward one only while it still names this
-- job. Two reads and one HDEL per call, none when `on` is false.
local function refs_drop(b, ids, on)
  if not on or #ids == 0 then return end
  local key = b .. 'refs'
  local refs = checked(redis.pcall('HMGET', key, unpack(ids)), key)
  local del, mine, fwd = {}, {}, {}
  for i = 1, #ids do
    if refs[i] then
      del[#del + 1] = ids[i]
      mine[#mine + 1] = ids[i]
      fwd[#fwd + 1] = refs[i]
    end
  end
  if #fwd == 0 then return end
  local now = redis.call('HMGET', key, unpack(fwd))
  for i = 1, #fwd do
    if now[i] == mine[i] then del[#del + 1] = fwd[i] end
  end
  redis.call('HDEL', key, unpack(del))
end
