// Package redisstore is a [store.Store] on Redis: every process and machine
// whose [heed.Transport] uses one Redis (and one [Config.Prefix]) shares
// blocks, pacing, learned rates, concurrency leases and write gaps, and so
// the whole fleet behaves as one client of the API it calls.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	store := redisstore.New(rdb, redisstore.Config{Instances: 8})
//	client := &http.Client{Transport: &heed.Transport{Store: store, Profile: profile.Jira()}}
//
// # One round trip per request
//
// [Store.Admit] runs one Lua script (admit.lua) over all of a request's
// scopes: blocks first, then write gaps, then concurrency caps, then GCRA
// pacing in every scope at the common send time, then leases; the same
// decision, to the nanosecond, as [memstore.Store] (package storetest
// checks both against one suite and against each other). A request
// through a [heed.Transport] is one round trip on its path, what its
// response taught and its release included: [Store.Release], and
// [Store.Update] of an update without a block (rates, charges, a server's
// count of what is left: what most responses teach), cost no round trip
// of their own. They are queued, in order, and the Store's next call
// carries them all in its own script, applied before its decision; when
// no call comes within 2ms, a background flusher sends them. So:
//
//   - the Store's own next admission finds the slot of a release free and
//     decides on what an update taught;
//   - other processes see them at most 2ms (plus a round trip) later;
//   - a release's gaps start at the instant of Release all the same, and
//     an update is applied on the clock of when it was made;
//   - an update with a block (a 429's) is its own call, and returns once
//     Redis has it: nothing is admitted past a wait the server mandated.
//     It carries the queue before it.
//
// At most 256 releases and updates are queued: beyond, and after
// [Store.Close], each is sent at once, in a call that carries the queue
// before it. [Store.Close] sends the queue. A queued update is applied
// once or not at all: one whose call fails is not sent again (a count
// applied twice would give back what was spent since); the local fallback
// has it, and its rates are re-asserted as those learned there (see
// below). Queuing them in the script of the next call, rather than
// pipelining update.lua before admit.lua, keeps them in one atomic script
// with the decision (nothing runs in between, on a Cluster's node too),
// costs one script call, not two, and needs nothing of the client but
// scripts (see [Client]). Scripts run by EVALSHA, falling back to EVAL
// when the server does not know them yet.
//
// Decisions are taken on the Redis server's clock (TIME), so processes
// whose clocks disagree still agree on when a block ends.
//
// # Lease mode: most decisions local
//
// With [Config.Batch] set, a Store decides most admissions without a round
// trip, where the scopes' rates leave room: an admission that finds no
// turn held makes a grant, the same script deciding the caller's turn and
// booking, behind it, up to Batch-1 more turns due at once in every pacing
// scope of the admission (as if as many requests had come together); the
// Store hands them out to the next admissions with the same scopes within
// [Config.Horizon], and lets the rest lapse. Grants double while they are
// used up in time and halve when they lapse. Concurrency caps become
// shares: the Store holds some of each capped scope's slots in Redis (as
// members of its lease set that expire 5 s after their last renewal),
// takes more when it runs short, and every second renews them and gives
// back what it did not use, so a request's slot lasts as long as the
// request. What it costs, and what it keeps:
//
//   - the fleet never sends more than Redis booked: every turn handed out
//     was booked in Redis's GCRA, and a lapsed turn is a request not sent;
//   - a turn that would wait is never booked ahead, so a scope whose rate
//     binds is decided per request, and a request that waits for its turn
//     is admitted by Redis when it comes;
//   - a block this Store learns stops its turns at once; another process's
//     block reaches them within Horizon (20 ms by default);
//   - a server's count of what is left (store.RateUpdate.Free) that this
//     Store learns is lowered by the turns it holds unsent, as for requests
//     in flight; another process's count does not know of them, and the
//     server's next count corrects it;
//   - [store.Decision.Metered] counts the turns a Store handed out when it
//     makes its next grant for the same scopes (lapsed turns are not
//     counted; nor are the last grant's, when demand stops).
//
// Writes (a gap), sliding logs, costs other than one unit, background
// requests and caps above 1,024 are decided per request.
//
// # Keys
//
// Each scope has up to two keys, both starting with the prefix's hash tag
// ("{heed}" by default), so that every key of one admission lies in one
// Redis Cluster slot:
//
//	{heed}:s:<scope>  hash: blocked until, gap end, GCRA TAT, learned rate,
//	                  burst, AIMD ceiling and expiry, and, for a scope
//	                  whose admissions are metered (store.ScopeAdmit.Meter),
//	                  this second's and the last second's counts
//	{heed}:l:<scope>  sorted set: leases, scored by their expiry
//	{heed}:e          hash: the epoch (see below), kept 30 days after the
//	                  last update
//	{heed}:u:<lease>  the undo marker of an admission whose reply was lost,
//	                  kept a minute
//
// Every scope key expires a few seconds after the last instant it holds
// has passed, so a scope that falls idle costs nothing. Leases expire by
// themselves: a process that dies mid-request frees its slots after the
// lease TTL; [Store.Renew] extends the lease of a request still running,
// so that short TTLs are safe.
//
// # Redis Cluster: one hash tag per prefix
//
// A script may touch keys of one slot only, and a request touches the
// global scope besides its tenant's and its endpoint's. One hash tag per
// tenant would spread tenants over the slots, but every admission would
// then need a second script on the global scope's node: two round trips,
// and a decision no longer atomic (a global turn booked and then refused
// by the tenant must be given back, and a crash in between leaks it). So
// all of a Store's keys share one tag, its prefix, and a Cluster spreads
// prefixes, not tenants: give independent fleets, or groups of tenants
// that share no global limit, their own [Config.Prefix].
//
// # When Redis fails
//
// A call that fails, or takes longer than its timeout ([Config.Timeout],
// raised to four times the measured 99th percentile of Redis's latency,
// up to [Config.MaxTimeout]), is decided locally, on a [memstore.Store] in
// which every scope's rate and burst are divided by [Config.Instances],
// every concurrency limit is divided by it, rounded up, and every write gap
// is multiplied by it: the fleet as a
// whole stays within its budget while each process decides alone.
// [Config.FailThreshold] failures in a row make the Store fall back; it
// logs the change and reports it to [Config.OnHealth], probes Redis every
// [Config.ProbeInterval], and returns after [Config.RecoverThreshold]
// good probes in a row. Neither hand-over adds a burst: local buckets
// start empty, and after the return Redis takes each scope's bucket as
// empty at the instant of the return, refilling at its rate since. Local
// gaps are multiplied by Instances. [Store.Stats] counts the switches.
//
// Nothing a fault interrupts is lost. Leases taken in the fallback are
// released there. A release that cannot reach Redis (queued releases whose
// call failed among them) is kept and delivered when Redis answers again.
// An update that cannot reach Redis has its effect in the fallback, and
// its rates are re-asserted when Redis is back. An admission whose reply
// is lost (a paused server runs it when it resumes) is undone: its lease id is chosen before
// the call, and the undo leaves a marker that makes the late admission a
// no-op. Blocks are also kept locally, so a process that loses Redis still
// honours them.
//
// Redis may also come back empty (a restart without persistence, FLUSHALL,
// a failover to an empty replica). The epoch key tells: it is created with
// a new epoch whenever it is missing, and a Store that sees an epoch other
// than the one it knew re-asserts the blocks it holds (merged by maximum,
// never shortening) and the last rate it set for each scope. For a moment
// after a loss is seen, admissions wait (as for a busy scope), so that the
// Stores holding blocks re-assert them before anyone is admitted; a Store
// that holds a running block checks the epoch every
// [Config.GuardInterval] from a goroutine that ends with its last block or
// at [Store.Close].
//
// Call [Store.Check] at start: it reports a wrong address, password or ACL
// clearly, with the password redacted.
//
// Package redistest starts a real redis-server for tests, on a free port,
// and can kill, pause and restart it; it also starts a three-master Redis
// Cluster and adds ACL users.
package redisstore
