-- gcra_all: decide one cost against the GCRA quotas of several keys as one
-- decision (see store.Quota's AllowAll): when every quota allows it, all
-- are charged (or, for a refund, given back); when any refuses, none is
-- changed. Each key is decided as gcra.lua decides it alone, on one clock
-- reading, and written as gcra.lua writes it.
--
-- KEYS[i]        quota key of limit i, read as gcra.lua reads it: its value
--                the TAT in microseconds, or empty (gcra_ms.lua's) with the
--                TAT as its expiry; the keys share a hash tag
-- ARGV[1]        cost (-burst to burst of every limit), as in gcra.lua
-- ARGV[2]        empty for the server's TIME, or, for tests only, now in
--                microseconds since 1970 (expiries then set with PXAT)
-- ARGV[2i+1]     limit i's emission interval T, in whole microseconds;
--                for one of whole milliseconds, now is rounded down to a
--                millisecond, as memstore and gcra_ms.lua count
-- ARGV[2i+2]     limit i's burst; its tolerance is T * burst
--                A strict limit (strict.lua, prepended) has minus its
--                window in microseconds for T, and its limit for burst.
--
-- Returns an array of one integer per key, in gcra.lua's encoding: R when
-- the request was allowed, -(R + 1) when it was refused, R being the time
-- until the key's TAT after the decision. When any limit refuses, every
-- reply is a refusal with R the time until the TAT as it stands. A strict
-- limit's reply is four integers instead (strict_write's).

local cost = tonumber(ARGV[1])
local clock = tonumber(ARGV[2])
local now = clock
if not now then
  local time = redis.call("TIME")
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- tatOf returns key's TAT, at least now, and whether the key exists; nil
-- for a key that holds no TAT (a lock's token, say).
local function tatOf(key, now)
  local stored = redis.call("GET", key)
  local tat = now
  if stored == "" then
    if clock then
      tat = redis.call("PEXPIRETIME", key) * 1000
    else
      local pttl = redis.call("PTTL", key)
      tat = pttl >= 0 and now + pttl * 1000 or -1
    end
    if tat < 0 then return nil end
  elseif stored then
    tat = tonumber(stored)
    if not tat then return nil end
  end
  if tat < now then tat = now end
  return tat, stored ~= false
end

local limits, refused = {}, false
for i, key in ipairs(KEYS) do
  local t = tonumber(ARGV[2 * i + 1])
  if t < 0 then
    limits[i] = strict_read(key, now, -t, tonumber(ARGV[2 * i + 2]), cost)
    if limits[i].refused then refused = true end
  else
    local at = now
    if t % 1000 == 0 then at = now - now % 1000 end
    local tat, exists = tatOf(key, at)
    if not tat then return redis.error_reply("ERR quota key holds no TAT") end
    local new_tat = tat + cost * t
    -- A refund gives back at most what makes the quota full.
    if new_tat < at then new_tat = at end
    if cost >= 0 and new_tat - at > t * tonumber(ARGV[2 * i + 2]) then refused = true end
    limits[i] = {key = key, now = at, tat = tat, new_tat = new_tat, exists = exists}
  end
end

local out = {}
for _, l in ipairs(limits) do
  local reset = l.new_tat and l.new_tat - l.now
  if l.strict then
    strict_write(l, refused, cost, clock, out)
  elseif refused then
    out[#out + 1] = -(l.tat - l.now) - 1
  elseif cost < 0 and reset == 0 then
    -- The refund leaves the quota full: delete the key, as its expiry would.
    if l.exists then redis.call("DEL", l.key) end
    out[#out + 1] = 0
  else
    if l.new_tat ~= l.tat then
      -- As gcra.lua: the TAT rounded up to a millisecond, as a time to live
      -- on the server's clock or, under a test clock, as a time (PXAT).
      local exp, unit = reset, "PX"
      if clock then exp, unit = l.new_tat, "PXAT" end
      local ms = math.floor((exp + 999) / 1000)
      if ms * 1000 < exp then ms = ms + 1 elseif (ms - 1) * 1000 >= exp then ms = ms - 1 end
      redis.call("SET", l.key, string.format("%.0f", l.new_tat), unit, ms)
    end
    out[#out + 1] = reset
  end
end
return out
