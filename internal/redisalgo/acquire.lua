-- acquire: take KEYS[1] for a token, in one round trip.
--
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter (store.FenceKey(KEYS[1]); same hash tag), only
--          when fenced
-- ARGV[1]  token
-- ARGV[2]  ttl in milliseconds (>= 1)
-- ARGV[3]  "1" to hand out a fencing token, else "0"
-- ARGV[4]  "1" for a reentrant (hash) lock, else "0"
-- ARGV[5]  ttl of the fencing counter in milliseconds
--
-- Returns {acquired, n, holds, pttl}: when acquired is 1, n is the fencing
-- token (0 when none was asked for), holds the owner's hold count and pttl
-- the key's time to live in milliseconds; when it is 0, n is the PTTL of the
-- key (-1: no expiry, -2: expired meanwhile).

-- Before Redis 5, TIME in a script that writes needs effects replication.
if redis.replicate_commands then redis.replicate_commands() end

local key, fenceKey = KEYS[1], KEYS[2]
local token, ttl = ARGV[1], ARGV[2]
local fenced, reentrant = ARGV[3] == "1", ARGV[4] == "1"

-- nextFence moves the counter to max(old + 1, server time in microseconds)
-- and keeps it for the fence ttl. The counter strictly increases while it
-- lives; after it expired it restarts from the clock, above every value it
-- gave before unless the server clock stepped back.
local function nextFence()
  local t = redis.call("TIME")
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local old = tonumber(redis.call("GET", fenceKey) or "0") or 0
  local target = old + 1
  if now > target then target = now end
  local n = redis.call("INCRBY", fenceKey, target - old)
  redis.call("PEXPIRE", fenceKey, ARGV[5])
  return n
end

if not reentrant then
  if redis.call("SET", key, token, "NX", "PX", ttl) then
    local f = 0
    if fenced then f = nextFence() end
    return {1, f, 1, tonumber(ttl)}
  end
  -- Our own token: this is a retry of a command whose reply was lost. The
  -- key is ours as it stands.
  if redis.call("TYPE", key).ok == "string" and redis.call("GET", key) == token then
    local f = 0
    if fenced then f = nextFence() end
    return {1, f, 1, redis.call("PTTL", key)}
  end
  return {0, redis.call("PTTL", key), 0, 0}
end

local kind = redis.call("TYPE", key).ok
if kind == "none" then
  local f = 0
  if fenced then
    f = nextFence()
    redis.call("HSET", key, token, 1, ":fence", f)
  else
    redis.call("HSET", key, token, 1)
  end
  redis.call("PEXPIRE", key, ttl)
  return {1, f, 1, tonumber(ttl)}
end
if kind == "hash" and redis.call("HEXISTS", key, token) == 1 then
  local holds = redis.call("HINCRBY", key, token, 1)
  -- A re-entry never shortens the hold it joins.
  local pttl = redis.call("PTTL", key)
  if pttl >= 0 and pttl < tonumber(ttl) then
    redis.call("PEXPIRE", key, ttl)
    pttl = tonumber(ttl)
  end
  local f = 0
  if fenced then
    f = tonumber(redis.call("HGET", key, ":fence") or "0") or 0
    if f == 0 then
      -- The hold was taken without a fence: this re-entry starts one.
      f = nextFence()
      redis.call("HSET", key, ":fence", f)
    end
  end
  return {1, f, holds, pttl}
end
return {0, redis.call("PTTL", key), 0, 0}
