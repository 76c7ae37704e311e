-- common.lua is prepended to every script.
--
-- ARGV[1] is one space-separated list of arguments (one bulk string is
-- cheaper to send and to box in Go than many). Its first two are the
-- current time in seconds and nanoseconds since the epoch, or '-' to use
-- the Redis server's clock, so that processes with skewed clocks agree.
--
-- Instants are stored as decimal nanoseconds since the epoch ("<s><9 digits
-- of ns>") and handled in the script as nanoseconds relative to now, which
-- a double holds exactly for 104 days either side: pacing arithmetic is
-- then exact to the nanosecond, like the Go reference.
--
-- State hash per scope (KEYS[2i-1]):
--   b  blocked until       g  gap end (not before)     t  GCRA TAT
--   r  learned rate        k  learned burst            u  learned rate until
--   x  when the hash expires (see save)
--   v  the bound b was set from (store.Block.Bound), "0" for a wait
--   m  the end of the waits the server mandated (blocks that are no bounds)
-- Lease sorted set per scope (KEYS[2i]): member lease id, score expiry in
-- microseconds since the epoch.

local A = {}
for w in string.gmatch(ARGV[1], '%S+') do A[#A + 1] = w end

local nowS, nowNs
if A[1] == '-' then
  local t = redis.call('TIME')
  nowS, nowNs = tonumber(t[1]), tonumber(t[2]) * 1000
else
  nowS, nowNs = tonumber(A[1]), tonumber(A[2])
end
local nowUs = nowS * 1000000 + math.floor(nowNs / 1000)

-- Every key outlives the last instant it holds by this many milliseconds.
local SLACK = 10000

-- rel returns a stored instant as nanoseconds after now (negative when past),
-- or nil for a missing field.
local function rel(v)
  if not v then return nil end
  local n = string.len(v)
  if n <= 9 then return tonumber(v) - nowNs - nowS * 1e9 end
  return (tonumber(string.sub(v, 1, n - 9)) - nowS) * 1e9 + (tonumber(string.sub(v, n - 8)) - nowNs)
end

-- abs returns the instant d nanoseconds after now in the stored form.
local function abs(d)
  local t = nowNs + d
  local s = math.floor(t / 1e9)
  local ns = t - s * 1e9
  if ns < 0 then
    s, ns = s - 1, ns + 1e9
  elseif ns >= 1e9 then
    s, ns = s + 1, ns - 1e9
  end
  return string.format('%d%09d', nowS + s, ns)
end

-- save writes fields (a list of names and values) to the state hash key
-- and keeps the hash alive SLACK past the latest instant it holds (b, g,
-- t, u: relative, nil when absent). The hash remembers its expiry in field
-- x, so that the expiry is pushed out only when the latest instant has
-- moved by half of SLACK: one PEXPIRE every few seconds on a busy scope.
local function save(key, fields, x, b, g, t, u)
  local m = 0
  if b and b > m then m = b end
  if g and g > m then m = g end
  if t and t > m then m = t end
  if u and u > m then m = u end
  local refresh = not x or x < m + SLACK * 5e5
  if refresh then
    local ms = math.ceil(m / 1e6) + SLACK
    fields[#fields + 1] = 'x'
    fields[#fields + 1] = abs(ms * 1e6)
    redis.call('HSET', key, unpack(fields))
    redis.call('PEXPIRE', key, ms)
  else
    redis.call('HSET', key, unpack(fields))
  end
end

local MAXAHEAD = 100 * 365 * 24 * 3600 * 1e9 -- limiter's maxAhead

-- span is limiter.Pace.span: the time units take at rate, truncated to
-- the nanosecond and bounded.
local function span(units, rate)
  if not (units > 0) then return 0 end
  local s = units / rate * 1e9
  if s >= MAXAHEAD then return MAXAHEAD end
  return math.floor(s)
end

-- num parses an argument; NaN never reaches the script (Go sends 0).
local function num(i) return tonumber(A[i]) end

-- usAt returns the instant d nanoseconds after now in microseconds since
-- the epoch, the unit of lease expiries (nowUs for d = 0).
local function usAt(d)
  local t = nowNs + d
  local s = math.floor(t / 1e9)
  return (nowS + s) * 1000000 + math.floor((t - s * 1e9) / 1000)
end

-- The epoch key ({tag}:e, a hash: e epoch, g grace until) tells a Store
-- that Redis lost its data (a restart without persistence, FLUSHALL, a
-- failover to an empty replica): it is created with a new epoch whenever
-- it is missing, so a Store that remembers another epoch knows to
-- re-assert what it holds. For grace after a loss is detected, admissions
-- wait, so that every Store holding a block has re-asserted it first.
local EPOCHTTL = 30 * 24 * 3600 * 1000 -- ms; refreshed by every update

-- epoch returns the current epoch, whether it differs from expected ('-'
-- for a Store that has seen none), and the grace still to run (ns, or nil).
local function epoch(ek, expected, cand, grace)
  local h = redis.call('HMGET', ek, 'e', 'g')
  local ep, g = h[1], rel(h[2])
  if not ep then
    -- The server's clock makes the epoch new even when the Store that
    -- created the lost one creates this one.
    local t = redis.call('TIME')
    ep = cand .. '.' .. t[1] .. '.' .. t[2]
    redis.call('HSET', ek, 'e', ep)
    redis.call('PEXPIRE', ek, EPOCHTTL)
  end
  local lost = expected ~= '-' and expected ~= ep
  if lost and not g and grace > 0 then
    g = grace
    redis.call('HSET', ek, 'g', abs(g))
  end
  if g and g <= 0 then g = nil end
  return ep, lost, g
end
