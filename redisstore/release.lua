-- release.lua: give back leases and start the gaps, and apply the updates
-- queued with them (see pending.lua), when no admission carried them.
--
-- A: now_s now_ns, then the pending section; KEYS: its keys.
-- Returns each rate the section's updates set, in order, as a string.

local out = {}
pending(3, 1, out)
return out
