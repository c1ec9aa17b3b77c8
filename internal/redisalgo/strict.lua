-- strict: the sliding window of a strict rate (store.Rate.Strict), decided
-- as storekit.DecideStrict decides it, step for step. This file only
-- defines functions: it is prepended to gcra_all.lua, which calls them for
-- its strict limits (one script decides a stack of smooth and strict
-- rates atomically, and AllowN of a strict rate is that script on one key).
--
-- A strict key is a list of admission times, in microseconds, newest
-- first: one entry per admitted unit of cost. An admission at a counts
-- over [a, a + window); the key expires when its newest entry leaves the
-- window, and entries that left are trimmed by the next allowed decision.
-- A Limit of at most 10,000 (storekit.MaxStrict) bounds the list.
--
-- Every number stays an integer below 2^53, so Lua's doubles hold it
-- exactly; the one division, to milliseconds, is corrected for rounding.

-- strict_read reads key at now for a limit of limit per window (both in
-- microseconds) and decides cost on it, writing nothing. It counts the
-- entries still in the window (newer than now - window): a prefix of the
-- list, found by halving. A key of another kind fails the script
-- (WRONGTYPE) before anything is written.
local function strict_read(key, now, window, limit, cost)
  local n = redis.call("LLEN", key)
  local cut, live = now - window, n
  if n > 0 and tonumber(redis.call("LINDEX", key, n - 1)) <= cut then
    local lo, hi = 0, n - 1 -- the first entry that left is in [lo, hi]
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if tonumber(redis.call("LINDEX", key, mid)) <= cut then hi = mid else lo = mid + 1 end
    end
    live = lo
  end
  return {strict = true, key = key, now = now, window = window, limit = limit,
    n = n, live = live, refused = cost >= 0 and live + cost > limit}
end

-- ceil_ms rounds a positive count of microseconds up to milliseconds.
local function ceil_ms(us)
  local ms = math.floor((us + 999) / 1000)
  if ms * 1000 < us then ms = ms + 1 elseif (ms - 1) * 1000 >= us then ms = ms - 1 end
  return ms
end

-- strict_write writes the decision of l (strict_read's) unless refused
-- (by l or by another limit), and appends its reply to out: four
-- integers, the first gcra.lua's encoding of the reset R (R allowed,
-- -(R + 1) refused), then remaining, the time until remaining grows and,
-- when l itself refused, the time until cost fits (else 0), all in
-- microseconds. An allowed charge pushes cost entries (at now, or at the
-- newest entry if the clock went back) and sets the expiry (PXAT under a
-- test clock); a refund drops the oldest -cost entries.
local function strict_write(l, refused, cost, clock, out)
  local key, live, add, keep, stamp = l.key, l.live, 0, l.live, l.now
  if not refused then
    if cost > 0 then add = cost elseif cost < 0 then keep = math.max(live + cost, 0) end
    if keep == 0 then
      if l.n > 0 then redis.call("DEL", key) end
    elseif keep < l.n then
      redis.call("LTRIM", key, 0, keep - 1)
    end
    if add > 0 then
      if keep > 0 then stamp = math.max(stamp, tonumber(redis.call("LINDEX", key, 0))) end
      local text, batch = string.format("%.0f", stamp), {}
      for k = 1, math.min(add, 1000) do batch[k] = text end
      for left = add, 1, -1000 do
        redis.call("LPUSH", key, unpack(batch, 1, math.min(left, 1000)))
      end
      if clock then
        redis.call("PEXPIREAT", key, ceil_ms(stamp + l.window))
      else
        redis.call("PEXPIRE", key, ceil_ms(stamp + l.window - l.now))
      end
    end
  end
  -- The list now holds the decision's log, newest first, in its first used
  -- entries, the first add of them at stamp.
  local used, seen = keep + add, {}
  local function aged(j)
    if j < add then return stamp + l.window - l.now end
    if not seen[j] then seen[j] = tonumber(redis.call("LINDEX", key, j)) end
    return seen[j] + l.window - l.now
  end
  local reset, refill, retry = 0, 0, 0
  if used > 0 then
    reset, refill = aged(0), aged(math.min(used, l.limit) - 1)
  end
  if l.refused then retry = aged(l.limit - cost) end
  if refused then reset = -reset - 1 end
  out[#out + 1] = reset
  out[#out + 1] = math.max(l.limit - used, 0)
  out[#out + 1] = refill
  out[#out + 1] = retry
end
