-- renew.lua: extend a lease that is still held.
--
-- KEYS: the lease set of each scope the lease holds.
-- A: now_s now_ns lease ttl (nanoseconds).
-- A lease no longer held (released, or expired) is left alone.

local lease, ttl = A[3], num(4)
local exp = nowS * 1000000 + math.ceil((nowNs + ttl) / 1000)
local ms = math.ceil(ttl / 1e6) + SLACK
for i = 1, #KEYS do
  local old = redis.call('ZSCORE', KEYS[i], lease)
  if old and tonumber(old) > nowUs then
    redis.call('ZADD', KEYS[i], 'XX', 'GT', exp, lease)
    if redis.call('PTTL', KEYS[i]) < ms - SLACK / 2 then redis.call('PEXPIRE', KEYS[i], ms) end
  end
end
return 0
