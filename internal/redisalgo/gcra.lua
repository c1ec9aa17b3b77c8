-- gcra: decide a request against the GCRA quota of KEYS[1], and charge it
-- when it is allowed, or give back a refund (see store.Quota). memstore's
-- gcra is the same algorithm, step for step.
--
-- KEYS[1]  quota key; its value is the theoretical arrival time (TAT), in
--          microseconds since 1970, and its PEXPIRE the time until the TAT
--          (the quota full again), rounded up to a millisecond; an empty
--          value is gcra_ms.lua's, whose TAT is the expiry itself
-- ARGV[1]  emission interval T, in whole microseconds (at least 1)
-- ARGV[2]  burst (at least 1); the tolerance is T * burst
-- ARGV[3]  cost (-burst to burst); 0 peeks without charging, and a
--          negative cost -n refunds n requests charged earlier: always
--          allowed, it lowers the TAT by n * T but never below now, DELs
--          the key when that leaves the quota full (a SET with PX 0 would
--          fail), and writes nothing when the key does not exist
-- ARGV[4]  optional, for tests only: now, in microseconds since 1970;
--          without it, now is the server's TIME; with it, the key's
--          expiry is set as a time (PXAT the TAT), not a duration
--
-- Returns one integer, the reset R: how long, in microseconds, until the
-- TAT (the quota full again) after the decision; R when the request was
-- allowed, -(R + 1) when it was refused. The caller works out the rest from
-- R, T, burst and cost: remaining = max(tau - R, 0) // T, and, when refused,
-- retry after = R + cost * T - tau. One integer is the cheapest reply to
-- send and to parse, and that matters on a hot path.
--
-- Every number stays an integer below 2^53 (store.Rate.Check bounds the
-- tolerance), so Lua's doubles compute it exactly. The one division, the
-- PEXPIRE's rounding up to a millisecond, is corrected for rounding.

local key = KEYS[1]
local t = tonumber(ARGV[1])
local cost = tonumber(ARGV[3])
local tau = t * tonumber(ARGV[2])
local now
if ARGV[4] then
  now = tonumber(ARGV[4])
else
  local time = redis.call("TIME")
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end

local tat = now
local stored = redis.call("GET", key)
if stored == "" then
  -- gcra_ms.lua's key: the TAT is its expiry, to the millisecond.
  if ARGV[4] then
    tat = redis.call("PEXPIRETIME", key) * 1000
  else
    local pttl = redis.call("PTTL", key)
    tat = pttl >= 0 and now + pttl * 1000 or -1
  end
  if tat < 0 then return redis.error_reply("ERR quota key holds no TAT") end
  if tat < now then tat = now end
elseif stored then
  -- Anything but a TAT (a lock's token, say) is somebody else's key.
  tat = tonumber(stored)
  if not tat then return redis.error_reply("ERR quota key holds no TAT") end
  if tat < now then tat = now end
end
local new_tat = tat + cost * t
-- A refund gives back at most what makes the quota full.
if new_tat < now then new_tat = now end

-- A refund is allowed even on an overspent quota: it only gives back.
if cost >= 0 and new_tat - now > tau then
  return -(tat - now) - 1
end
local reset = new_tat - now
if cost < 0 and reset == 0 then
  -- The refund leaves the quota full: delete the key, as its expiry would.
  -- It may also be a key whose TAT has passed but whose PEXPIRE, rounded
  -- up to a millisecond, has not.
  if stored then redis.call("DEL", key) end
elseif new_tat ~= tat then
  -- The key expires at the TAT, rounded up to a millisecond: after reset
  -- on the server's clock, or, under a test clock, at the TAT itself
  -- (PXAT), so that a key never expires in real time while the test
  -- clock stands still.
  local exp, unit = reset, "PX"
  if ARGV[4] then exp, unit = new_tat, "PXAT" end
  local ms = math.floor((exp + 999) / 1000)
  if ms * 1000 < exp then ms = ms + 1 elseif (ms - 1) * 1000 >= exp then ms = ms - 1 end
  redis.call("SET", key, string.format("%.0f", new_tat), unit, ms)
end
return reset
