-- admit.lua: one admission decision over all of a request's scopes, or,
-- in lease mode (Config.Batch), a grant: that decision's pacing plus turns
-- booked ahead for the Store to hand out locally. A grant leaves
-- concurrency caps to the Store, which holds a share of each capped
-- scope's slots (shares.lua).
--
-- KEYS: the epoch key, the lease's undo marker, then per scope i its state
-- hash and its lease set, then the keys of the pending section.
-- A: now_s now_ns cost paced max_wait lease_ttl lease background reserve
--    epoch new_epoch grace drain scopes meter turns counted, then per
--    scope: rate burst limit gap cost window, then the pending section
--    (see pending.lua): the Store's releases and updates queued since its
--    last call, applied before the decision.
--    Durations in nanoseconds; paced and background are 1 or 0; drain is
--    '-' or when the Store returned from its fallback (ns from now);
--    lease is 0 when no scope takes one; epoch is the one the Store last
--    saw, '-' for none; meter is the index from 1 of the scope whose
--    admissions are counted (ScopeAdmit.Meter), 0 for none. turns is 0 for
--    an admission; above 0 the call is a grant of up to turns turns in all,
--    the first the caller's, the others those due at once behind it; a
--    grant checks no concurrency cap (the Store checks its share of each)
--    and takes no lease (lease is 0); counted is how many turns of the
--    grant before it the Store handed out, which the meter counts now.
-- Returns {reason, scope index from 0, wait in ns, reserved 1 or 0, epoch,
-- metered, rate, ceiling} (the epoch only when it is not the one the Store
-- sent, else nil; the last three only for an admission with a meter:
-- Decision.Metered, Rate and Ceiling), and for a grant past its blocks
-- always those eight (false where absent) and how many turns it booked
-- behind the caller's; and when the queued updates set rates, those
-- nine (false where absent) and the rates as set, as strings, in order;
-- with reason 0 admitted, 1 blocked, 2 paced, 3 busy, 4 spaced, and -1
-- when Redis lost its data since the Store's epoch; the order of the
-- checks and the arithmetic are those of memstore.Store.Admit and
-- limiter.Pace.Reserve.

local n = num(14)
local K = {}
for j = 3, 2 + 2 * n do K[#K + 1] = KEYS[j] end
local paced = A[4] == '1'
local maxWait = num(5)
local leaseTTL = num(6)
local lease = A[7]
local background = A[8] == '1'
local reserve = num(9)
-- drain: after a return from the fallback, buckets are taken as empty at
-- the return (A[13] nanoseconds from now, negative), refilling since.
local drain = A[13] ~= '-' and tonumber(A[13])
local meter = num(15)
local turns, counted = num(16), num(17)
local H, W = 17, 6 -- header and per-scope argument counts

-- Per scope: its default rate and burst, limit, gap, cost (the scope's
-- own, else the request's, else 1: Admission.cost), and window (ns; above
-- zero, limit counts admissions in any window: a sliding log in the lease
-- set, each place scored when it frees and never released).
local rate0, burst0, limit, gap, cost, window = {}, {}, {}, {}, {}, {}
local reqCost = num(3)
if not (reqCost > 0) then reqCost = 1 end
for i = 1, n do
  local j = H + (i - 1) * W
  rate0[i], burst0[i], limit[i], gap[i], cost[i], window[i] = num(j + 1), num(j + 2), num(j + 3), num(j + 4), num(j + 5), num(j + 6)
  if not (cost[i] > 0) then cost[i] = reqCost end
end

-- The Store's queued releases and updates first: they happened before this
-- admission, whatever the epoch.
local carried = {}
pending(H + n * W + 1, 3 + 2 * n, carried)

-- reply returns the reply d, followed, when the queued updates set rates,
-- by those rates: the fields up to the ninth then all present (false where
-- absent), the rates tenth.
local function reply(d)
  if #carried == 0 then return d end
  for j = 5, 9 do d[j] = d[j] or false end
  d[10] = carried
  return d
end

local ep, lost, grace = epoch(KEYS[1], A[10], A[11], num(12))
-- Redis lost its data: decide nothing until the Store has re-asserted what
-- it holds.
if lost then return reply({-1, 0, 0, 0, ep}) end
-- The epoch is sent back only when the Store does not know it yet.
if A[10] == ep then ep = nil end
-- The client gave this admission up (it timed out) and undid it first.
if lease ~= '0' and redis.call('EXISTS', KEYS[2]) == 1 then return reply({0, 0, 0, 0, ep}) end
-- Just after a loss, every Store that holds a block re-asserts it.
if grace then return reply({3, 0, grace, 0, ep}) end

local b, g, t, r, k, u, x, left, e = {}, {}, {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local h = redis.call('HMGET', K[2 * i - 1], 'b', 'g', 't', 'r', 'k', 'u', 'x', 'n', 'e')
  b[i], g[i], t[i], u[i], x[i] = rel(h[1]), rel(h[2]), rel(h[3]), rel(h[6]), rel(h[7])
  r[i], k[i] = h[4], h[5]
  -- A counted window (RateUpdate.Until): until e, only n units.
  e[i] = rel(h[9])
  if e[i] and e[i] > 0 then left[i] = tonumber(h[8]) or 0 else e[i] = nil end
end

-- latest returns the decision to wait for the latest instant of x after
-- now, the first scope winning ties, or nil when none lies ahead.
local function latest(x, reason)
  local last, at = 0, 0
  for i = 1, n do
    if x[i] and x[i] > last then last, at = x[i], i end
  end
  if at > 0 then return {reason, at - 1, last, 0, ep} end
  return nil
end

-- Blocks first: nothing is reserved for a request that cannot go.
local d = latest(b, 1)
if d then return reply(d) end
if drain then
  -- After a return from the fallback, a write to a spaced resource is
  -- assumed at the return (some process may have written locally), unless
  -- a learned rate paces the scope instead.
  for i = 1, n do
    local learned = (tonumber(r[i]) or 0) > 0 and u[i] and u[i] > 0
    if gap[i] > 0 and not learned then
      local f = drain + gap[i]
      if f > 0 and (not g[i] or g[i] < f) then g[i] = f end
    end
  end
end
d = latest(g, 4)
if d then return reply(d) end

-- A grant's reply: the turns booked behind the caller's, after the
-- decision's own fields.
local extra = 0
local function out(d)
  if turns <= 0 then return reply(d) end
  for j = 5, 8 do d[j] = d[j] or false end
  d[9] = extra
  return reply(d)
end

if turns <= 0 then
  -- Concurrency caps (a grant's are the Store's own shares).
  for i = 1, n do
    if limit[i] > 0 and window[i] <= 0 then
      redis.call('ZREMRANGEBYSCORE', K[2 * i], '-inf', nowUs)
      if redis.call('ZCARD', K[2 * i]) >= limit[i] then return reply({3, i - 1, 0, 0, ep}) end
    end
  end
end

-- Sliding logs: the request waits for the oldest place of the fullest.
do
  local full, fullest = 0, 0
  for i = 1, n do
    if limit[i] > 0 and window[i] > 0 then
      redis.call('ZREMRANGEBYSCORE', K[2 * i], '-inf', nowUs)
      local c = redis.call('ZCARD', K[2 * i])
      if c >= limit[i] then
        local e = redis.call('ZRANGE', K[2 * i], c - limit[i], c - limit[i], 'WITHSCORES')
        local w = (tonumber(e[2]) - nowS * 1000000) * 1000 - nowNs
        if w > full then full, fullest = w, i end
      end
    end
  end
  if fullest > 0 then return reply({2, fullest - 1, full, 0, ep}) end
end

if not paced then
  -- The request goes when the slowest of its scopes allows.
  local rates, bursts, yield, lapsed = {}, {}, {}, {}
  for i = 1, n do
    local rate, burst = rate0[i], burst0[i]
    local lr = tonumber(r[i])
    if lr and lr > 0 and u[i] and u[i] > 0 then
      rate, burst = lr, tonumber(k[i]) or 0
    elseif lr and lr > 0 and u[i] and rate > 0 then
      -- memstore's scopeState.lapse: the turns a lapsed rate booked past
      -- its end are dropped, once (its rate is cleared where this
      -- admission books).
      lapsed[i] = true
      if t[i] and t[i] > u[i] then t[i] = u[i] end
    end
    if rate > 0 then
      rates[i] = rate
      if not (burst > 0) then burst = 1 end
      bursts[i] = burst
      if drain then
        -- Hand-over from the local fallback: the fleet has been spending
        -- this scope's budget locally, so the burst is taken as spent and
        -- the next request waits a turn.
        local f = drain + span(burst, rate)
        if not t[i] or t[i] < f then t[i] = f end
      end
      if background and reserve > 0 and reserve < 1 then
        -- limiter.Pace.Yielding: keep a share of the burst for others.
        burst = burst - reserve * burst
        if burst < 1 - reserve then burst = 1 - reserve end
      end
      yield[i] = burst
    end
  end
  -- turn returns when the next request may go (ns from now) and the
  -- slowest scope (its index; 0 when none waits).
  local function turn()
    local wait, slowest = 0, 0
    for i = 1, n do
      local rate = rates[i]
      if rate then
        local burst = yield[i]
        local tat, floor = t[i], 0
        -- limiter.Pace.Reserve: a burst below one unit admits after a quiet
        -- spell of the missing part of an interval.
        if burst < 1 then floor = span(burst, rate) - span(1, rate) end
        if not tat or tat < floor then tat = floor end
        local allow = tat + span(cost[i], rate) - span(burst, rate)
        if allow < 0 then allow = 0 end
        if e[i] then
          -- A counted window: what is left, else the turn (or later, for a
          -- cost past the burst).
          if left[i] >= cost[i] + bursts[i] - burst then
            allow = 0
          elseif allow < e[i] then
            allow = e[i]
          end
        end
        if allow > wait then wait, slowest = allow, i end
      end
    end
    return wait, slowest
  end
  local wait, slowest = turn()
  if (maxWait > 0 and wait > maxWait) or (background and wait > 0) then
    -- Too long, or a background request, which never books ahead.
    return out({2, slowest - 1, wait, 0, ep})
  end
  -- book charges a request that goes at w to every paced scope. A key
  -- named twice is one scope: later reservations see earlier ones.
  local dn, dt = {}, {}
  local function book(w)
    local cur = {}
    for i = 1, n do
      local key = K[2 * i - 1]
      if rates[i] and e[i] and w < e[i] then
        -- Taken from what the window has left.
        cur[key .. 'n'] = (cur[key .. 'n'] or left[i]) - cost[i]
        dn[key] = true
      elseif rates[i] then
        local tat, floor = cur[key] or t[i], w
        if bursts[i] < 1 then floor = w + span(bursts[i], rates[i]) - span(1, rates[i]) end
        if not tat or tat < floor then tat = floor end
        cur[key] = tat + span(cost[i], rates[i])
        dt[key] = true
      end
    end
    for i = 1, n do
      local key = K[2 * i - 1]
      left[i] = cur[key .. 'n'] or left[i]
      t[i] = cur[key] or t[i]
    end
  end
  book(wait)
  -- A grant books the turns that follow while they are due now: a turn
  -- that waits is another request's own admission, which then sees every
  -- process's blocks when it comes.
  for _ = 2, turns do
    if turn() > 0 then break end
    book(0)
    extra = extra + 1
  end
  local saved = {}
  for i = 1, n do
    local key = K[2 * i - 1]
    if (dn[key] or dt[key]) and not saved[key] then
      saved[key] = true
      local f = {}
      if dn[key] then f[1], f[2] = 'n', string.format('%.17g', left[i]) end
      if dt[key] then f[#f + 1], f[#f + 2] = 't', abs(t[i]) end
      if lapsed[i] then f[#f + 1], f[#f + 2] = 'r', '0' end
      save(key, f, x[i], b[i], g[i], t[i], u[i])
    end
  end
  if wait > 0 then return out({2, slowest - 1, wait, 1, ep}) end
end

if lease ~= '0' then
  local exp = nowS * 1000000 + math.ceil((nowNs + leaseTTL) / 1000)
  local ms = math.ceil(leaseTTL / 1e6) + SLACK
  for i = 1, n do
    if limit[i] > 0 and window[i] > 0 then
      -- A place in the log, until it frees.
      local lk = K[2 * i]
      local wexp = nowS * 1000000 + math.ceil((nowNs + window[i]) / 1000)
      redis.call('ZADD', lk, wexp, lease)
      local wms = math.ceil(window[i] / 1e6) + SLACK
      if redis.call('PTTL', lk) < wms - SLACK / 2 then redis.call('PEXPIRE', lk, wms) end
    elseif limit[i] > 0 or gap[i] > 0 then
      local lk = K[2 * i]
      if limit[i] <= 0 then
        -- Leases of processes that died go when they expire (scopes with
        -- a limit were swept above).
        redis.call('ZREMRANGEBYSCORE', lk, '-inf', nowUs)
      end
      redis.call('ZADD', lk, exp, lease)
      -- The set outlives its latest lease by SLACK/2 to SLACK.
      if redis.call('PTTL', lk) < ms - SLACK / 2 then redis.call('PEXPIRE', lk, ms) end
    end
  end
end
if meter > 0 and meter <= n then
  -- memstore's scopeState.meter: this second's admissions (mc, of second
  -- ms) and the last second's (mp), the hash kept for the meter's two.
  local mk = K[2 * meter - 1]
  local h = redis.call('HMGET', mk, 'ms', 'mc', 'mp', 'x', 't', 'cl')
  local s, mc, mp = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3]) or 0
  if s == nowS - 1 then
    mp, mc = mc, 0
  elseif s ~= nowS then
    mp, mc = 0, 0
  end
  local m = mp * (1 - nowNs / 1e9) + mc
  local keep = u[meter]
  if not keep or keep < 2e9 then keep = 2e9 end
  save(mk, {'ms', string.format('%d', nowS), 'mc', mc + 1 + counted, 'mp', mp}, rel(h[4]), b[meter], g[meter], rel(h[5]), keep)
  -- The scope's AIMD ceiling (RateUpdate.Ceiling), while its rate holds.
  local cl, lr = '0', '0'
  if u[meter] and u[meter] > 0 and (tonumber(r[meter]) or 0) > 0 then cl, lr = h[6] or '0', r[meter] end
  return out({0, 0, 0, 0, ep or false, string.format('%.17g', m), lr, cl})
end
return out({0, 0, 0, 0, ep})
