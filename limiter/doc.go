// Package limiter holds heed's pacing arithmetic: pure functions of the time
// they are given, with no locks, no goroutines and no allocations, so that
// the in-memory store and the Redis store's Lua scripts can share one model
// and tests can check it exactly.
//
// Pacing uses the generic cell rate algorithm (GCRA): a scope keeps one
// instant, its theoretical arrival time (TAT). A request of cost c at rate r
// advances the TAT by c/r; it may go once the TAT, less the burst tolerance,
// is no later than now. Unlike a token bucket it needs no refill loop, and a
// reservation is one comparison and one addition.
package limiter
