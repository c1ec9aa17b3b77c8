-- gcra_ms: gcra.lua's decision for an emission interval of whole
-- milliseconds, with the theoretical arrival time (TAT) kept as the key's
-- expiry rather than as its value. Redis already knows how far away a
-- key's expiry is (PTTL) on its own clock, so the script needs no TIME,
-- and a new user's request (the most common write) costs one read and one
-- write; a returning user's adds a GET, to make sure the key is a quota.
-- On the request path the script is most of what a quota costs the server,
-- and this one costs it about 70% of gcra.lua.
--
-- The clock is Redis's millisecond clock; with an interval of whole
-- milliseconds every TAT is a whole millisecond too, so nothing is rounded.
-- memstore reads its clock at the same resolution for such rates and
-- decides exactly alike.
--
-- KEYS[1]  quota key; it expires at the TAT (the quota full again); its
--          value is empty, or the TAT in microseconds when gcra.lua wrote
--          it (the expiry says the same, rounded up to a millisecond, and
--          is what this script reads)
-- ARGV[1]  emission interval T, in whole milliseconds (at least 1)
-- ARGV[2]  burst (at least 1); the tolerance is T * burst
-- ARGV[3]  cost (-burst to burst), as in gcra.lua: 0 peeks, a negative
--          cost refunds
-- ARGV[4]  optional, for tests only: now, in milliseconds since 1970; the
--          script then reads the expiry as a time (PEXPIRETIME, Redis 7.0)
--          and writes it as one (PXAT), so that a test clock far from the
--          server's decides alone
--
-- Returns what gcra.lua returns, in microseconds: R when the request was
-- allowed, -(R + 1) when it was refused, R being the time until the TAT
-- after the decision.
--
-- A key without an expiry, or whose value is neither empty nor a number
-- (a lock's token, say), is no quota: the script answers an error and
-- changes nothing.

local key = KEYS[1]
local t = tonumber(ARGV[1])
local cost = tonumber(ARGV[3])
local tau = t * tonumber(ARGV[2])
local now = tonumber(ARGV[4])

-- r: milliseconds until the TAT; -2 when the key does not exist.
local r
if now then
  r = redis.call("PEXPIRETIME", key)
  if r >= 0 then r = math.max(r - now, 0) end
else
  r = redis.call("PTTL", key)
end
local exists = r ~= -2
if exists then
  local v = redis.call("GET", key)
  if r == -1 or (v ~= "" and not tonumber(v)) then
    return redis.error_reply("ERR quota key holds no TAT")
  end
else
  r = 0
end

local new = r + cost * t
-- A refund gives back at most what makes the quota full.
if new < 0 then new = 0 end
-- A refund is allowed even on an overspent quota: it only gives back.
if cost >= 0 and new > tau then
  return -r * 1000 - 1
end
if cost < 0 and new == 0 then
  -- A refund that leaves the quota full: delete the key, as its expiry
  -- would (a PEXPIRE of 0 deletes it too, but says so less plainly).
  if exists then redis.call("DEL", key) end
elseif new ~= r then
  if now then
    if exists then redis.call("PEXPIREAT", key, now + new)
    else redis.call("SET", key, "", "PXAT", now + new) end
  elseif exists then
    redis.call("PEXPIRE", key, new)
  else
    redis.call("SET", key, "", "PX", new)
  end
end
return new * 1000
