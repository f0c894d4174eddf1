-- Invalidates one L2 cache entry: replaces it with a tombstone {v = version, x = 1} kept for the
-- tombstone window, so a loader that began before the invalidation (its version is older) cannot
-- write its old value back (cache-set.lua refuses it). An entry already holding a NEWER version
-- than the invalidation is kept: it was written by a load or set that began after the
-- invalidation was minted.
-- Flag allow-oom: it frees memory (a tombstone replaces the entry and expires in the window) and
-- keeps the cache coherent; refused under OOM, a stale value would stay served.
--
-- @key entry emq:{c:<ns>:<key>}:entry the entry hash (see cache-set.lua)
-- @arg version version the protocol version
-- @arg ver id:ver the invalidation's version, minted now
-- @arg tombstone-ms 1..86400000 tombstone window in ms
-- @returns 1 tombstoned, 0 kept (the entry holds the same or a newer version).
-- @errors EMQ_VERSION (caller's version, or a stored `v` that is not a version id), EMQ_BAD_ARG (a
--   wrong key or argument count, a key that is not an entry key, a tombstone window that is not
--   a decimal integer in range), EMQ_BAD_ID, EMQ_WRONGTYPE (the entry is not a hash). Nothing is
--   written unless every input is valid.
-- @flags allow-oom
-- @uses args ids cache-keys cache-versions
need(#KEYS == 1 and #ARGV == 3, 'expected 1 key and 3 arguments')
need_entry_key(KEYS[1], 'entry', 1)
local ver = need_id(ARGV[2], 'ver')
local tombMs = need_int(ARGV[3], 1, 86400000, 'tombstone ms')
local stored = entry_version(KEYS[1])

if stored and not older(stored, ver) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ver, 'x', '1')
redis.call('PEXPIRE', KEYS[1], tombMs)
return 1
