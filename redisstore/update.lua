-- update.lua: what a response taught, applied at once, as
-- heed.MemoryStore.Update applies it, after the releases and the updates
-- the Store queued since its last call.
--
-- KEYS: the epoch key, then the keys of the pending section.
-- A: now_s now_ns epoch new_epoch grace, then the pending section (see
--    pending.lua): the Store's queued releases and updates, the oldest
--    first, then this update, the last operation.
-- Returns {epoch, then each rate the section's updates set, in order, as a
-- string}. An update applies whatever the epoch: blocks merge by maximum
-- and rates are the newest.

local ep = epoch(KEYS[1], A[3], A[4], num(5))
local out = {ep}
pending(6, 2, out)
return out
