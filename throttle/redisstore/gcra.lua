-- gcra: decide a request against the GCRA quota of KEYS[1], and charge it
-- when it is allowed, or give back a refund (see store.Quota). memstore's
-- gcra is the same algorithm, step for step.
--
-- KEYS[1]  quota key; its value is the theoretical arrival time (TAT), in
--          microseconds since 1970, and its PEXPIRE the time until the TAT
--          (the quota full again), rounded up to a millisecond
-- ARGV[1]  emission interval T, in whole microseconds (at least 1)
-- ARGV[2]  burst (at least 1); the tolerance is T * burst
-- ARGV[3]  cost (-burst to burst); 0 peeks without charging, and a
--          negative cost -n refunds n requests charged earlier: always
--          allowed, it lowers the TAT by n * T but never below now, DELs
--          the key when that leaves the quota full (a SET with PX 0 would
--          fail), and writes nothing when the key does not exist
-- ARGV[4]  optional, for tests only: now, in microseconds since 1970;
--          without it, now is the server's TIME
--
-- Returns {allowed (1 or 0), remaining, retry after, reset after}, the
-- durations in microseconds.
--
-- Every number stays an integer below 2^53 (store.Rate.Check bounds the
-- tolerance), so Lua's doubles compute it exactly; idiv corrects the one
-- inexact step, a rounded division.

local key = KEYS[1]
local t = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now
if ARGV[4] then
  now = tonumber(ARGV[4])
else
  local time = redis.call("TIME")
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- idiv returns floor(a / b) for integers a >= 0 and b >= 1.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

local tau = t * burst
local tat = now
local stored = redis.call("GET", key)
if stored then
  -- Anything but a TAT (a lock's token, say) is somebody else's key.
  tat = tonumber(stored)
  if not tat then return redis.error_reply("ERR quota key holds no TAT") end
  if tat < now then tat = now end
end
local new_tat = tat + cost * t
-- A refund gives back at most what makes the quota full.
if new_tat < now then new_tat = now end

-- remaining returns how many requests of cost 1 fit when the TAT is at.
local function remaining(at)
  local room = tau - (at - now)
  if room < 0 then return 0 end
  return idiv(room, t)
end

-- A refund is allowed even on an overspent quota: it only gives back.
if cost >= 0 and new_tat - now > tau then
  return {0, remaining(tat), new_tat - tau - now, tat - now}
end
if cost < 0 and new_tat <= now then
  -- The refund leaves the quota full: delete the key, as its expiry would.
  -- It may also be a key whose TAT has passed but whose PEXPIRE, rounded
  -- up to a millisecond, has not.
  if stored then redis.call("DEL", key) end
elseif new_tat ~= tat then
  local reset = new_tat - now
  redis.call("SET", key, string.format("%.0f", new_tat), "PX", idiv(reset + 999, 1000))
end
return {1, remaining(new_tat), 0, new_tat - now}
