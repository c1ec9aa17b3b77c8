-- delete: remove a lock or quota key whoever holds it, for an operator's
-- reset, and wake the key's watchers. The fencing counter stays, so that
-- the key's fences keep increasing.
--
-- KEYS[1]  lock key (a string, or a reentrant lock's hash) or quota key
-- KEYS[2]  the lock's record (store.RecordKey(KEYS[1]); same hash tag)
-- ARGV[1]  channel told that the key is free (KEYS[1] .. ":released")
--
-- Returns how many of the two keys existed.

local n = redis.call("DEL", KEYS[1], KEYS[2])
redis.call("PUBLISH", ARGV[1], "1")
return n
