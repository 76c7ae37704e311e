// Package redisstore is a [store.Store] on Redis: every process and machine
// whose [heed.Transport] uses one Redis (and one [Config.Prefix]) shares
// blocks, pacing, learned rates, concurrency leases and write gaps, and so
// the whole fleet behaves as one client of the API it calls.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	store := redisstore.New(rdb, redisstore.Config{Instances: 8})
//	client := &http.Client{Transport: &heed.Transport{Store: store, Profile: profile.Jira()}}
//
// # One round trip per decision
//
// [Store.Admit] runs one Lua script (admit.lua) over all of a request's
// scopes: blocks first, then write gaps, then concurrency caps, then GCRA
// pacing in every scope at the common send time, then leases; the same
// decision, to the nanosecond, as [memstore.Store] (package storetest
// checks both against one suite and against each other). [Store.Release]
// and [Store.Update] are one script each. Scripts run by EVALSHA, falling
// back to EVAL when the server does not know them yet.
//
// Decisions are taken on the Redis server's clock (TIME), so processes
// whose clocks disagree still agree on when a block ends.
//
// # Keys
//
// Each scope has up to two keys, both starting with the prefix's hash tag
// ("{heed}" by default), so that every key of one admission lies in one
// Redis Cluster slot:
//
//	{heed}:s:<scope>  hash: blocked until, gap end, GCRA TAT, learned rate,
//	                  burst and expiry
//	{heed}:l:<scope>  sorted set: leases, scored by their expiry
//
// Every key expires a few seconds after the last instant it holds has
// passed, so a scope that falls idle costs nothing. Leases expire by
// themselves: a process that dies mid-request frees its slots after the
// lease TTL. All of a Store's scopes live in one slot, on one node of a
// cluster; give independent fleets different prefixes to spread them.
//
// # When Redis fails
//
// A call that fails, or takes longer than [Config.Timeout], makes the Store
// fall back to a local [memstore.Store] in which every scope's rate and
// burst are divided by [Config.Instances] and every concurrency limit is
// divided by it, rounded up: the fleet as a whole stays within its budget
// while each process decides alone. The Store logs the change and reports
// it to [Config.OnHealth], tries Redis again at most every
// [Config.ProbeInterval], and returns to it when it answers. Leases taken in
// the fallback are released there; blocks learned while on Redis are also
// kept locally, so a process that loses Redis still honours them.
//
// Package redistest starts a real redis-server for tests, on a free port,
// and can kill, pause and restart it.
package redisstore
