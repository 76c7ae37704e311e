-- undo.lua: take back an admission whose reply the client never read (its
-- call failed or timed out), so that it leaves no concurrency slot behind.
--
-- KEYS: the lease's undo marker, then the lease set of each scope the
-- lease may hold.
-- A: now_s now_ns lease.
-- The marker outlives any admission still on its way to Redis (one sent
-- before a pause runs when the server resumes): admit.lua does nothing for
-- a lease that has one.

local lease = A[3]
redis.call('SET', KEYS[1], '1', 'PX', 60000)
for i = 2, #KEYS do redis.call('ZREM', KEYS[i], lease) end
return 0
