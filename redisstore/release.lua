-- release.lua: give back a lease and start the gaps.
--
-- KEYS: per scope i that takes leases, its state hash (2i-1) and its lease
-- set (2i).
-- A: now_s now_ns lease, then per scope: gap in nanoseconds.
-- A scope's gap starts only when the lease was held there and had not
-- expired (a released lease that had expired no longer spoke for a
-- request), and when no rate is learned for the scope: a learned rate
-- supersedes the gap, as in heed.MemoryStore.Release.

local lease = A[3]
for i = 1, #KEYS / 2 do
  local sk, lk = KEYS[2 * i - 1], KEYS[2 * i]
  local exp = redis.call('ZSCORE', lk, lease)
  if exp then
    redis.call('ZREM', lk, lease)
    local gap = num(3 + i)
    if gap > 0 and tonumber(exp) > nowUs then
      local h = redis.call('HMGET', sk, 'b', 'g', 't', 'u', 'x', 'r')
      local b, g, t, u = rel(h[1]), rel(h[2]), rel(h[3]), rel(h[4])
      local learned = (tonumber(h[6]) or 0) > 0 and u and u > 0
      if not learned and (not g or gap > g) then
        g = gap
        save(sk, {'g', abs(g)}, rel(h[5]), b, g, t, u)
      end
    end
  end
end
return 0
