-- pending.lua follows common.lua in the scripts that carry a Store's
-- queued work (admit.lua, update.lua, release.lua): releases, and updates
-- of what responses taught that carry no block.
--
-- The pending section starts at argument j and key k: how many operations,
-- how many rates their updates set in all, then each operation, in the
-- order the Store made them:
--
--   a release: its lease, how long ago it was released (ns), how many
--     scopes m it holds, and their m gaps (ns); keys: per scope its state
--     hash when it has a gap, and its lease set;
--   an update: 'u', how long ago it was made (ns), nblocks nrates ncharges
--     maxscopes (Config.MaxScopes, -1 for no bound), then per block: its
--     duration in nanoseconds (> 0; negated for a bound, store.Block.Bound),
--     then per rate: rate factor add default min max burst ttl owed event
--     until ceiling (ttl in nanoseconds; owed, from RateUpdate.Free, the
--     units of pacing debt the server's count leaves, below 0 for none;
--     event, for a cut, how many nanoseconds ago its refused request was
--     sent, below 0 for none; until, RateUpdate.Until in nanoseconds, 0 for
--     none; ceiling, RateUpdate.Ceiling, 0 to leave the held one), then per
--     charge: its cost; keys: the epoch key, the index of learned scopes,
--     then the state hash of each block's, each rate's and each charge's
--     scope.
--
-- The Store queues releases and updates for a few milliseconds to send
-- them with its next call: a release's gaps start when it was released,
-- and an update is applied on the clock of when it was made.

-- release gives back one lease and starts the gaps, as
-- heed.MemoryStore.Release does at the instant of the release, from
-- argument j and key k; it returns the argument and key after it.
--
-- A scope's gap starts only when the lease was held there and had not
-- expired when it was released (a lease that had expired no longer spoke
-- for a request), and when no rate was learned for the scope then: a
-- learned rate supersedes the gap.
local function release(j, k)
  local lease, at, m = A[j], -num(j + 1), num(j + 2)
  j = j + 3
  local atUs = usAt(at)
  for _ = 1, m do
    local gap = num(j)
    j = j + 1
    if gap <= 0 then
      -- Only a gap needs the state hash and the lease's expiry.
      redis.call('ZREM', KEYS[k], lease)
      k = k + 1
    else
      local sk, lk = KEYS[k], KEYS[k + 1]
      k = k + 2
      local exp = redis.call('ZSCORE', lk, lease)
      if exp then
        redis.call('ZREM', lk, lease)
        local e = at + gap
        if e > 0 and tonumber(exp) > atUs then
          local h = redis.call('HMGET', sk, 'b', 'g', 't', 'u', 'x', 'r')
          local b, g, t, u = rel(h[1]), rel(h[2]), rel(h[3]), rel(h[4])
          local learned = (tonumber(h[6]) or 0) > 0 and u and u > at
          if not learned and (not g or e > g) then
            g = e
            save(sk, {'g', abs(g)}, rel(h[5]), b, g, t, u)
          end
        end
      end
    end
  end
  return j, k
end

-- learned notes a scope whose rate is newly learned in the index idx
-- (scored by when, the clock's now), and, past maxScopes, drops up to two of those learned
-- longest ago that hold no block and no gap (their leases, if any, expire
-- on their own); one it keeps goes to the back.
local function learned(sk, idx, maxScopes)
  if maxScopes < 0 then return end
  local at = usAt(0)
  redis.call('ZADD', idx, at, sk)
  if redis.call('PTTL', idx) < EPOCHTTL / 2 then redis.call('PEXPIRE', idx, EPOCHTTL) end
  if redis.call('ZCARD', idx) <= maxScopes then return end
  local old = redis.call('ZPOPMIN', idx, 2)
  for m = 1, #old, 2 do
    local k = old[m]
    local h = redis.call('HMGET', k, 'b', 'g')
    local b, g = rel(h[1]), rel(h[2])
    if k == sk or (b and b > 0) or (g and g > 0) then
      redis.call('ZADD', idx, at, k)
    else
      redis.call('DEL', k)
    end
  end
end

-- update applies what a response taught, as heed.MemoryStore.Update does,
-- from argument j (after its 'u') and key k, and appends each rate as set,
-- as a string, to out; it returns the argument and key after it. An update
-- applies whatever the epoch: blocks merge by maximum and rates are the
-- newest.
local function update(j, k, out)
  local age, nb, nr, nc, maxScopes = num(j), num(j + 1), num(j + 2), num(j + 3), num(j + 4)
  j = j + 5
  local idx = KEYS[k + 1]
  redis.call('PEXPIRE', KEYS[k], EPOCHTTL)
  k = k + 2
  -- On the clock of when it was made: rel, abs and save count from then,
  -- so that it finds, and leaves, what it would have then.
  nowNs = nowNs - age

  for _ = 1, nb do
    local sk = KEYS[k]
    local d = num(j)
    k, j = k + 1, j + 1
    -- A bound (store.Block.Bound) comes negated.
    local bound = d < 0
    if bound then d = -d end
    local h = redis.call('HMGET', sk, 'b', 'g', 't', 'u', 'x', 'v', 'm')
    local b, g, t, u = rel(h[1]), rel(h[2]), rel(h[3]), rel(h[4])
    local m = rel(h[7]) or 0
    -- Blocks merge by maximum: a shorter block never shortens a longer one,
    -- but a bound of the turn that the block in force bounds (v, while it is
    -- the block) leaves the nearer of the two, never before the end of the
    -- waits the server mandated (m).
    if bound and b and b > 0 and h[6] == h[1] then
      if d < b then
        local nb = d
        if m > nb then nb = m end
        save(sk, {'b', abs(nb), 'v', abs(d)}, rel(h[5]), nb, g, t, u)
      end
    elseif not b or d > b then
      b = d
      local v = '0'
      if bound then v = abs(b) end
      local f = {'b', abs(b), 'v', v}
      if not bound then f[5], f[6] = 'm', abs(d) end
      save(sk, f, rel(h[5]), b, g, t, u)
    elseif not bound and d > m then
      save(sk, {'m', abs(d)}, rel(h[5]), b, g, t, u)
    end
  end

  for _ = 1, nr do
    local sk = KEYS[k]
    k = k + 1
    local h = redis.call('HMGET', sk, 'b', 'g', 't', 'u', 'r', 'k', 'x', 'c')
    local b, g, t, u = rel(h[1]), rel(h[2]), rel(h[3]), rel(h[4])
    local cur = 0
    if u and u > 0 then cur = tonumber(h[5]) or 0 end
    local lapsed = false
    if cur == 0 and u and (tonumber(h[5]) or 0) > 0 and t and t > u then
      -- memstore's scopeState.lapse: the turns a lapsed rate booked past
      -- its end are dropped.
      t, lapsed = u, true
    end
    local rate, factor, add, def = num(j), num(j + 1), num(j + 2), num(j + 3)
    local lo, hi, burst, ttl = num(j + 4), num(j + 5), num(j + 6), num(j + 7)
    local owed, ago, till, ceil = num(j + 8), num(j + 9), num(j + 10), num(j + 11)
    j = j + 12
    -- RateUpdate.Event: a cut of an event that has cut already is skipped.
    local skip = false
    if ago >= 0 and factor > 0 and factor < 1 then
      local lc = rel(h[8])
      if lc and lc > -ago then skip = true end
    end
    if skip then
      out[#out + 1] = h[5] or '0'
    else
    -- heed.RateUpdate.Apply
    local v = rate
    if not (v > 0) then
      v = cur
      if not (v > 0) then v = def end
      if factor > 0 then v = v * factor end
      v = v + add
    end
    if hi > 0 and v > hi then v = hi end
    if lo > 0 and v < lo then v = lo end
    if v ~= v then v = 0 end
    u = ttl
    local fields = {'r', string.format('%.17g', v), 'k', string.format('%.17g', burst), 'u', abs(u)}
    if lapsed then fields[7], fields[8] = 't', abs(t) end
    local old = cur -- cmp.Or(cur, Default)
    if old == 0 then old = def end
    if old > 0 and v > 0 and v ~= old and t and t > 0 then
      -- The next turn is one new interval after the turn last booked (one
      -- old interval before t), which a waiter may hold: a slower rate
      -- applies from the next turn on. A faster one carries the pacing
      -- debt, held as time at the old rate, over in units, so that it takes
      -- effect at once, but never onto the turn last booked.
      local booked = t - span(1, old) + span(1, v)
      if v > old then booked = math.max(math.floor(t * old / v), booked) end
      t = booked
      fields[7], fields[8] = 't', abs(t)
    end
    if cur > 0 and v > 0 and burst < (tonumber(h[6]) or 0) and t then
      -- limiter.Pace.Forgive: debt borrowed against a larger learned burst
      -- than the new one is forgiven.
      local bb = burst
      if not (bb > 0) then bb = 1 end
      local limit = span(bb, v)
      if t > limit then
        t = limit
        fields[7], fields[8] = 't', abs(t)
      end
    end
    if owed >= 0 and v > 0 then
      -- RateUpdate.Free: the server's count of what is left replaces the
      -- store's debt.
      t = span(owed, v)
      fields[7], fields[8] = 't', abs(t)
      local bb = burst
      if not (bb >= 1) then bb = 1 end
      local free = bb - owed
      if till > 0 then
        -- RateUpdate.Until: a window's count, nothing back before it turns.
        t = till
        fields[8] = abs(t)
        fields[#fields + 1] = 'n'
        fields[#fields + 1] = string.format('%.17g', free)
        fields[#fields + 1] = 'e'
        fields[#fields + 1] = abs(t)
      else
        fields[#fields + 1] = 'e'
        fields[#fields + 1] = '0'
      end
    end
    if ago >= 0 and factor > 0 and factor < 1 then
      fields[#fields + 1] = 'c'
      fields[#fields + 1] = abs(0)
    end
    if ceil > 0 then
      -- RateUpdate.Ceiling; one of a rate that had lapsed lapses with it.
      fields[#fields + 1] = 'cl'
      fields[#fields + 1] = string.format('%.17g', ceil)
    elseif cur == 0 then
      fields[#fields + 1] = 'cl'
      fields[#fields + 1] = '0'
    end
    save(sk, fields, rel(h[7]), b, g, t, u)
    if cur == 0 then learned(sk, idx, maxScopes) end
    out[#out + 1] = fields[2]
    end
  end

  for _ = 1, nc do
    local sk = KEYS[k]
    local c = num(j)
    k, j = k + 1, j + 1
    local h = redis.call('HMGET', sk, 'b', 'g', 't', 'u', 'r', 'x', 'n', 'e')
    local b, g, t, u = rel(h[1]), rel(h[2]), rel(h[3]), rel(h[4])
    local rate = tonumber(h[5])
    local e = rel(h[8])
    -- limiter.Charge, at the learned rate only.
    if rate and rate > 0 and u and u > 0 and c ~= 0 and e and e > 0 then
      -- In a counted window, the charge is taken from what it has left.
      local l = (tonumber(h[7]) or 0) - c
      save(sk, {'n', string.format('%.17g', l)}, rel(h[6]), b, g, t, u)
    elseif rate and rate > 0 and u and u > 0 and c ~= 0 then
      if c > 0 then
        if not t or t < 0 then t = 0 end
        t = t + span(c, rate)
      else
        if t then t = t - span(-c, rate) end
        if not t or t < 0 then t = 0 end
      end
      save(sk, {'t', abs(t)}, rel(h[6]), b, g, t, u)
    end
  end
  nowNs = nowNs + age
  return j, k
end

-- pending applies the pending section from argument j and key k, appending
-- the rates its updates set to out, and returns the argument and key after
-- it.
local function pending(j, k, out)
  local n = num(j)
  j = j + 2
  for _ = 1, n do
    if A[j] == 'u' then
      j, k = update(j + 1, k, out)
    else
      j, k = release(j, k)
    end
  end
  return j, k
end
