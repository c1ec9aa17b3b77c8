-- acquire_holders: take one of ARGV[4] places of KEYS[1] for a token (a
-- semaphore), in one round trip.
--
-- KEYS[1]  semaphore key: a sorted set of the holders' tokens, each scored
--          by its expiry in milliseconds of the server's clock
-- KEYS[2]  fencing counter (store.FenceKey(KEYS[1]); same hash tag), only
--          when fenced
-- ARGV[1]  token
-- ARGV[2]  ttl in milliseconds (>= 1; a hundred years at most are kept)
-- ARGV[3]  "1" to hand out a fencing token, else "0"
-- ARGV[4]  how many tokens may hold the key at once (>= 2)
-- ARGV[5]  ttl of the fencing counter in milliseconds
--
-- Returns {acquired, n, holders, ttl}: when acquired is 1, n is the fencing
-- token (0 when none was asked for), holders how many tokens hold the key
-- now and ttl the token's time to live in milliseconds; when it is 0, n is
-- how long until a place frees (the earliest holder's time to live, or the
-- PTTL of a plain lock on the key) and holders how many hold it.
--
-- The key expires with its latest holder, so that a set whose holders all
-- went away without releasing disappears.

-- Before Redis 5, TIME in a script that writes needs effects replication.
if redis.replicate_commands then redis.replicate_commands() end

local key, fenceKey = KEYS[1], KEYS[2]
-- Scores stay whole numbers: a place lasts a hundred years at most.
local token, ttl = ARGV[1], math.min(tonumber(ARGV[2]), 3155760000000)
local fenced, limit = ARGV[3] == "1", tonumber(ARGV[4])

local kind = redis.call("TYPE", key).ok
if kind ~= "none" and kind ~= "zset" then
  -- A plain or reentrant lock holds the key: the two never mix.
  return {0, redis.call("PTTL", key), 1, 0}
end

local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- nextFence: as in acquire.lua.
local function nextFence()
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local old = tonumber(redis.call("GET", fenceKey) or "0") or 0
  local target = old + 1
  if us > target then target = us end
  local n = redis.call("INCRBY", fenceKey, target - old)
  redis.call("PEXPIRE", fenceKey, ARGV[5])
  return n
end

local count = 0
if kind == "zset" then
  redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
  count = redis.call("ZCARD", key)
  -- Our own token: this is a retry of a command whose reply was lost. The
  -- place is ours as it stands.
  local mine = redis.call("ZSCORE", key, token)
  if mine then
    local f = 0
    if fenced then f = nextFence() end
    return {1, f, count, math.max(tonumber(mine) - now, 1)}
  end
  if count >= limit then
    local first = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
    return {0, math.max(tonumber(first[2]) - now, 1), count, 0}
  end
end

local expires = now + ttl
redis.call("ZADD", key, expires, token)
local last = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", key, last[2])
local f = 0
if fenced then f = nextFence() end
return {1, f, count + 1, ttl}
