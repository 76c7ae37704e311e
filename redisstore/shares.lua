-- shares.lua: renews or gives back a Store's shares of concurrency slots
-- in lease mode (see share below).
--
-- KEYS: per scope its lease set.
-- A: now_s now_ns share share_ttl, then per scope: limit held want.
-- Returns the shares held, per scope.

-- share sets how many of the concurrency slots in lease set lk one Store
-- holds as its share, in lease mode (Config.Batch): the members id:1 ..
-- id:held are its own. It gives them all back and takes up to want again,
-- within limit (none when limit is 0 or less), each expiring ttl (ns) from
-- now, and returns how many it holds.
local function share(lk, limit, id, held, want, ttl)
  redis.call('ZREMRANGEBYSCORE', lk, '-inf', nowUs)
  if held > 0 then
    local m = {}
    for j = 1, held do m[j] = id .. ':' .. j end
    redis.call('ZREM', lk, unpack(m))
  end
  local n = want
  if limit > 0 then
    local free = limit - redis.call('ZCARD', lk)
    if n > free then n = free end
  else
    n = 0
  end
  if n <= 0 then return 0 end
  local exp, z = usAt(ttl), {}
  for j = 1, n do z[2 * j - 1], z[2 * j] = exp, id .. ':' .. j end
  redis.call('ZADD', lk, unpack(z))
  local ms = math.ceil(ttl / 1e6) + SLACK
  if redis.call('PTTL', lk) < ms - SLACK / 2 then redis.call('PEXPIRE', lk, ms) end
  return n
end

local id, ttl = A[3], num(4)
local got = {}
for i = 1, #KEYS do
  local j = 4 + 3 * (i - 1)
  got[i] = share(KEYS[i], num(j + 1), id, num(j + 2), num(j + 3), ttl)
end
return got
