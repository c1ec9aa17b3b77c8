-- record: store ARGV[2] as the record of the lock KEYS[1] if, and only if,
-- ARGV[1] holds it, expiring when the lock does, and wake the key's waiters.
--
-- KEYS[1]  lock key
-- KEYS[2]  record key (store.RecordKey(KEYS[1]); same hash tag)
-- ARGV[1]  token
-- ARGV[2]  record (any bytes)
-- ARGV[3]  channel told when the key is released or recorded
--          (KEYS[1] .. ":released")
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
local at = redis.call("PEXPIRETIME", key)
if at == -1 then
  -- A lock without expiry (not written by throttle): the record lives as
  -- long, until the release deletes both.
  redis.call("SET", recordKey, ARGV[2])
else
  redis.call("SET", recordKey, ARGV[2], "PXAT", at)
end
redis.call("PUBLISH", ARGV[3], "1")
return 1
