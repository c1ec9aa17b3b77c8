-- extend: set the ttl of KEYS[1] if, and only if, ARGV[1] holds it (a
-- reentrant key's ttl is raised, never lowered).
--
-- KEYS[1]  lock key
-- ARGV[1]  token
-- ARGV[2]  new ttl in milliseconds (>= 1)
--
-- Returns 1 extended, 2 held by another token, 3 gone (on a semaphore: the
-- token holds no place).

local key, token = KEYS[1], ARGV[1]
local kind = redis.call("TYPE", key).ok
if kind == "none" then return 3 end
if kind == "zset" then
  -- A semaphore (see acquire_holders.lua): the token's place gets the new
  -- ttl, and the key expires with its latest holder.
  if redis.replicate_commands then redis.replicate_commands() end
  local score = redis.call("ZSCORE", key, token)
  local t = redis.call("TIME")
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if not score or tonumber(score) <= now then return 3 end
  -- Scores stay whole numbers: a place lasts a hundred years at most.
  redis.call("ZADD", key, "XX", now + math.min(tonumber(ARGV[2]), 3155760000000), token)
  local last = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
  redis.call("PEXPIREAT", key, last[2])
  return 1
end
local ours = false
if kind == "string" then
  ours = redis.call("GET", key) == token
elseif kind == "hash" then
  ours = redis.call("HEXISTS", key, token) == 1
end
if not ours then return 2 end
-- One owner's holds share a reentrant key's TTL: never lower it.
if kind == "hash" then
  local pttl = redis.call("PTTL", key)
  if pttl >= 0 and pttl >= tonumber(ARGV[2]) then return 1 end
end
redis.call("PEXPIRE", key, ARGV[2])
return 1
