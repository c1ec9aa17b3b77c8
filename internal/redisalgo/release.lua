-- release: free KEYS[1] if, and only if, ARGV[1] holds it, and delete its
-- record with it.
--
-- KEYS[1]  lock key
-- KEYS[2]  the lock's record (store.RecordKey(KEYS[1]); same hash tag);
--          may be left out when the caller knows there is no record (the
--          Redis stores' release during a Cluster slot migration)
-- ARGV[1]  token
-- ARGV[2]  channel told when the key is freed (KEYS[1] .. ":released")
--
-- Returns 1 freed, 2 held by another token, 3 gone, 4 still held (a
-- reentrant key whose hold count went down but not to zero; its record
-- stays). On a semaphore (see acquire_holders.lua) it frees the token's
-- place only: 1, or 3 when the token holds none.

local key, token = KEYS[1], ARGV[1]

-- Most locks are plain strings: one GET tells gone, ours or another's.
-- Only when GET fails (WRONGTYPE) is the key asked for its type; that
-- saves a TYPE on every plain release. Nothing is defined before that:
-- a local function would be made anew on every run.
local v = redis.pcall("GET", key)
if v == false then return 3 end
if type(v) == "table" then
  local kind = redis.call("TYPE", key).ok
  if kind == "zset" then
    -- A semaphore (a sorted set of tokens scored by their expiry in
    -- milliseconds): free the token's place; gone when the token holds
    -- none, or its time ended. The key then expires with its latest holder.
    -- Before Redis 5, TIME in a script that writes needs effects replication.
    if redis.replicate_commands then redis.replicate_commands() end
    local score = redis.call("ZSCORE", key, token)
    if not score then return 3 end
    local t = redis.call("TIME")
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call("ZREM", key, token)
    if tonumber(score) <= now then return 3 end
    local last = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
    if last[2] then redis.call("PEXPIREAT", key, last[2]) end
    redis.call("PUBLISH", ARGV[2], "1")
    return 1
  end
  if kind ~= "hash" then return 2 end
  if redis.call("HEXISTS", key, token) == 0 then return 2 end
  if redis.call("HINCRBY", key, token, -1) > 0 then return 4 end
elseif v ~= token then
  return 2
end
if KEYS[2] then
  redis.call("DEL", key, KEYS[2])
else
  redis.call("DEL", key)
end
redis.call("PUBLISH", ARGV[2], "1")
return 1
