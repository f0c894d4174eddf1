-- Writes one L2 cache entry, fenced by its version: the write lands only when the entry holds no
-- version, or an OLDER one (live value or tombstone). A loader that began before an invalidation
-- carries an older version than the tombstone, so it can never write its old value back. Newer
-- mint wins; an equal version is not written twice. The tag index is not written here (another
-- slot): see cache-tag.lua.
-- No script flag: a write grows memory by a new entry, so under OOM it is refused at its first
-- write, as a legacy script (a cache whose writes fail still serves its loads).
--
-- @key entry emq:{c:<ns>:<key>}:entry the entry hash: v version id, d JSON value, t tags, g grace
--   ms, n = 1 a cached miss, x = 1 a tombstone
-- @arg version version the protocol version
-- @arg ver id:ver the writer's version, minted when its load began
-- @arg value json the value as JSON text ("" = a cached miss: the entry gets n = 1 and no d)
-- @arg ttl 1..315360000000 fresh time in ms, jitter already applied by the caller
-- @arg max-bytes 1..536870912 largest value in bytes
-- @arg tags text tags, space-separated ("" = none); each 1..512 printable ASCII without braces
-- @arg grace 0..315360000000 grace in ms: the entry lives ttl + grace, stale during the grace
-- @returns {1} written, or {0, storedVersion} when the entry holds the same or a newer version.
-- @errors EMQ_VERSION (caller's version, or a stored `v` that is not a version id), EMQ_BAD_ARG
--   (missing or malformed arguments: every number is a decimal integer in range; a key that is
--   not an entry key), EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE, EMQ_WRONGTYPE (the entry is not a
--   hash). Every input is checked, and the entry read, before the first write: a refusal writes
--   nothing.
-- @uses args ids cache-keys cache-versions
need(#KEYS == 1 and #ARGV == 7, 'expected 1 key and 7 arguments')
need_entry_key(KEYS[1], 'entry', 1)
local LIMIT = 315360000000
local ver, value, tags = need_id(ARGV[2], 'ver'), ARGV[3], ARGV[6]
local ttl = need_int(ARGV[4], 1, LIMIT, 'ttl')
local maxBytes = need_int(ARGV[5], 1, 536870912, 'max bytes')
local grace = need_int(ARGV[7], 0, LIMIT, 'grace')
if #value > maxBytes then
  fail('PAYLOAD_TOO_LARGE', 'value is ' .. #value .. ' bytes, the limit is ' .. maxBytes)
end
if tags ~= '' then
  for tag in string.gmatch(tags, '[^ ]+') do need(#tag <= 512, 'a tag is longer than 512 bytes') end
  need(not (string.find(tags, '[^\33-\122\124\126 ]') or string.find(tags, '^ ') or string.find(tags, ' $') or string.find(tags, '  ')),
    'tags must be printable ASCII without braces, separated by single spaces')
end
local stored = entry_version(KEYS[1])

if stored and not older(stored, ver) then return { 0, stored } end
redis.call('DEL', KEYS[1])
local fields = { 'v', ver }
if value == '' then
  fields[#fields + 1] = 'n'
  fields[#fields + 1] = '1'
else
  fields[#fields + 1] = 'd'
  fields[#fields + 1] = value
end
if tags ~= '' then
  fields[#fields + 1] = 't'
  fields[#fields + 1] = tags
end
if grace > 0 then
  fields[#fields + 1] = 'g'
  fields[#fields + 1] = grace
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIRE', KEYS[1], ttl + grace)
return { 1 }
