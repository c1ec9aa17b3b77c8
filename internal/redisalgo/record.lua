-- record: store ARGV[2] as the record of the lock KEYS[1] and set the
-- lock's ttl to ARGV[4] (as extend.lua does), if, and only if, ARGV[1]
-- holds it; the record expires with the lock. Wakes the key's waiters.
--
-- KEYS[1]  lock key
-- KEYS[2]  record key (store.RecordKey(KEYS[1]); same hash tag)
-- ARGV[1]  token
-- ARGV[2]  record (any bytes)
-- ARGV[3]  channel told when the key is released or recorded
--          (KEYS[1] .. ":released")
-- ARGV[4]  the lock's new ttl in milliseconds (>= 1): a Replay's retention,
--          where its in-flight mark had a short lease
--
-- Returns 1 recorded, 2 held by another token, 3 gone.
--
-- The record gets the lock's absolute expiry (PEXPIRETIME, then SET PXAT),
-- not its remaining time: a PTTL read and a SET PX written a moment later
-- would let the record outlive the lock by that moment. PEXPIRETIME needs
-- Redis 7.0.

local key, recordKey, token = KEYS[1], KEYS[2], ARGV[1]
local kind = redis.call("TYPE", key).ok
if kind == "none" then return 3 end
local ours = false
if kind == "string" then
  ours = redis.call("GET", key) == token
elseif kind == "hash" then
  ours = redis.call("HEXISTS", key, token) == 1
end
if not ours then return 2 end
-- One owner's holds share a reentrant key's TTL: never lower it.
if kind == "string" or redis.call("PTTL", key) < tonumber(ARGV[4]) then
  redis.call("PEXPIRE", key, ARGV[4])
end
redis.call("SET", recordKey, ARGV[2], "PXAT", redis.call("PEXPIRETIME", key))
redis.call("PUBLISH", ARGV[3], "1")
return 1
