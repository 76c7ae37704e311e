// Package storetest is the conformance suite of [store.Store]: every Store
// passes [Run], which checks the semantics of the reference
// [memstore.Store] (blocks, write gaps, concurrency caps, lease expiry,
// GCRA pacing over all of a request's scopes, Paced and MaxWait, learned
// rates), and [Differential], which feeds a Store and a MemoryStore the
// same random operations and compares every decision.
//
// Both drive a manual [Clock] that they pass to the store under test, so
// they need no synctest bubble and never sleep: a store under test must
// take every decision on that clock.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
//			return &memstore.Store{Now: now}
//		})
//	}
package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedhttp/heed/store"
)

// NewStore returns a new Store for the test t, empty as far as t can see,
// that takes its decisions at the times now returns.
type NewStore func(t *testing.T, now func() time.Time) store.Store

// Run runs the conformance suite on the stores newStore returns, one per
// subtest.
func Run(t *testing.T, newStore NewStore) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock()
			h := &harness{t: t, s: newStore(t, clock.Now), clock: clock}
			tc.run(h)
		})
	}
}

// harness is one subtest's store and clock.
type harness struct {
	t     *testing.T
	s     store.Store
	clock *Clock
}

func (h *harness) admit(a *store.Admission) store.Decision {
	h.t.Helper()
	d, err := h.s.Admit(context.Background(), a)
	if err != nil {
		h.t.Fatalf("Admit(%v) error: %v", scopeKeys(a), err)
	}
	return d
}

// expect admits a and checks the decision: reason, wait (exact, except
// for Busy, whose wait is a hint that must be positive), scope and
// reservation. It returns the decision.
func (h *harness) expect(a *store.Admission, reason store.WaitReason, wait time.Duration, scope string, reserved bool) store.Decision {
	h.t.Helper()
	d := h.admit(a)
	got := store.Decision{Reason: d.Reason, Wait: d.Wait, Scope: d.Scope, Reserved: d.Reserved}
	want := store.Decision{Reason: reason, Wait: wait, Scope: scope, Reserved: reserved}
	if reason == store.Busy {
		if d.Wait <= 0 {
			h.t.Errorf("Admit(%v) = busy with wait %v, want a positive wait", scopeKeys(a), d.Wait)
		}
		got.Wait = 0
	}
	if got != want {
		h.t.Errorf("Admit(%v) at +%v = %s, want %s", scopeKeys(a), h.clock.Now().Sub(Start), describe(got), describe(want))
	}
	if d.Reason != store.Admitted && d.Lease != 0 {
		h.t.Errorf("Admit(%v) = %s with lease %d, want a lease only when admitted", scopeKeys(a), describe(got), d.Lease)
	}
	return d
}

// admitted admits a, expecting it to go at once, and returns its lease.
func (h *harness) admitted(a *store.Admission) store.Lease {
	h.t.Helper()
	return h.expect(a, store.Admitted, 0, "", false).Lease
}

func (h *harness) release(a *store.Admission, l store.Lease) {
	h.t.Helper()
	if err := h.s.Release(context.Background(), a, l); err != nil {
		h.t.Fatalf("Release(%v, %d) error: %v", scopeKeys(a), l, err)
	}
}

func (h *harness) update(u *store.Update) {
	h.t.Helper()
	if err := h.s.Update(context.Background(), u); err != nil {
		h.t.Fatalf("Update error: %v", err)
	}
}

// count tells the store a scope's count (RateUpdate.Free), until a window
// turns when until is above zero.
func (h *harness) count(key string, rate, burst, free float64, until time.Duration) {
	h.update(&store.Update{Rates: []store.RateUpdate{{Key: key, Rate: rate, Burst: burst, Free: free, HasFree: true, Until: until}}})
}

func (h *harness) charge(key string, cost float64) {
	h.update(&store.Update{Charges: []store.Charge{{Key: key, Cost: cost}}})
}

// within returns a with its pacing wait bounded by maxWait.
func within(a *store.Admission, maxWait time.Duration) *store.Admission {
	return &store.Admission{Scopes: a.Scopes, MaxWait: maxWait}
}

func (h *harness) block(key string, d time.Duration) {
	h.t.Helper()
	h.update(&store.Update{Blocks: []store.Block{{Key: key, For: d}}})
}

func adm(scopes ...store.ScopeAdmit) *store.Admission {
	return &store.Admission{Scopes: scopes}
}

// describe formats a decision for test messages.
func describe(d store.Decision) string {
	if d.Reason == store.Admitted {
		if d.Metered != 0 {
			return fmt.Sprintf("admitted (metered %v)", d.Metered)
		}
		return "admitted"
	}
	msg := fmt.Sprintf("%v for %v by %q", d.Reason, d.Wait, d.Scope)
	if d.Reserved {
		msg += " (reserved)"
	}
	return msg
}

func scopeKeys(a *store.Admission) []string {
	keys := make([]string, len(a.Scopes))
	for i := range a.Scopes {
		keys[i] = a.Scopes[i].Key
	}
	return keys
}

// span is how long units take at rate, as limiter.Pace computes it.
func span(units, rate float64) time.Duration {
	return time.Duration(units / rate * float64(time.Second))
}

const (
	ms = time.Millisecond
	s  = time.Second
)

var cases = []struct {
	name string
	run  func(h *harness)
}{
	{"UnlimitedScopesAdmitWithoutLease", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "free"}, store.ScopeAdmit{Key: "free too"})
		for range 5 {
			if l := h.admitted(a); l != 0 {
				h.t.Errorf("Admit = lease %d, want no lease for scopes without Limit or Gap", l)
			}
		}
		h.admitted(&store.Admission{})
	}},
	{"BlocksMergeByMaximum", func(h *harness) {
		h.block("e", 10*s)
		h.block("e", 2*s)
		a := adm(store.ScopeAdmit{Key: "g"}, store.ScopeAdmit{Key: "e"})
		h.expect(a, store.Blocked, 10*s, "e", false)
		h.clock.Advance(9 * s)
		h.expect(a, store.Blocked, 1*s, "e", false)
		h.block("e", 3*s) // the latest block outlasts the first: it wins
		h.expect(a, store.Blocked, 3*s, "e", false)
		h.clock.Advance(3 * s)
		h.admitted(a) // a block ends at its instant
		h.admitted(adm(store.ScopeAdmit{Key: "g"}))
	}},
	{"LatestBlockOfSeveralScopesWins", func(h *harness) {
		h.update(&store.Update{Blocks: []store.Block{{Key: "x", For: 3 * s}, {Key: "y", For: 7 * s}, {Key: "z", For: 5 * s}}})
		h.expect(adm(store.ScopeAdmit{Key: "x"}, store.ScopeAdmit{Key: "y"}, store.ScopeAdmit{Key: "z"}), store.Blocked, 7*s, "y", false)
		h.expect(adm(store.ScopeAdmit{Key: "z"}, store.ScopeAdmit{Key: "x"}), store.Blocked, 5*s, "z", false)
		h.update(&store.Update{Blocks: []store.Block{{Key: "p", For: 4 * s}, {Key: "q", For: 4 * s}}})
		h.expect(adm(store.ScopeAdmit{Key: "q"}, store.ScopeAdmit{Key: "p"}), store.Blocked, 4*s, "q", false)
		h.clock.Advance(5 * s)
		h.expect(adm(store.ScopeAdmit{Key: "x"}, store.ScopeAdmit{Key: "y"}, store.ScopeAdmit{Key: "z"}), store.Blocked, 2*s, "y", false)
	}},
	{"MeterCountsAdmissionsOverTheLastSecond", func(h *harness) {
		metered := func(a *store.Admission) float64 {
			h.t.Helper()
			d := h.admit(a)
			if d.Reason != store.Admitted {
				h.t.Fatalf("Admit(%v) = %s, want admitted", scopeKeys(a), describe(d))
			}
			return d.Metered
		}
		a := adm(store.ScopeAdmit{Key: "t"}, store.ScopeAdmit{Key: "e", Meter: true})
		plain := adm(store.ScopeAdmit{Key: "e"})
		want := func(got, want float64) {
			h.t.Helper()
			if got != want {
				h.t.Errorf("Metered at +%v = %v, want %v", h.clock.Now().Sub(Start), got, want)
			}
		}
		// Start is a whole second: 4 admissions in its first 500ms.
		for i := range 4 {
			want(metered(a), float64(i))
			h.clock.Advance(100 * ms)
		}
		if d := h.admit(plain); d.Metered != 0 {
			h.t.Errorf("Metered = %v with no scope asking for a meter, want 0", d.Metered)
		}
		// Into the next second, at +1.25s: the previous second's 4 (only
		// admissions that ask for the meter count) at the three quarters
		// of that second not yet a second old.
		h.clock.Advance(850 * ms)
		want(metered(a), 4*0.75)
		h.clock.Advance(500 * ms) // +1.75s: 4 × 0.25, and this second's 1
		want(metered(a), 4*0.25+1)
		h.clock.Advance(2 * s) // +3.75s: nothing in the last second
		want(metered(a), 0)
		// A blocked or paced admission counts nothing.
		h.block("e", s)
		h.expect(a, store.Blocked, s, "e", false)
		h.clock.Advance(s)
		// +4.75s: the one at +3.75s, in the previous second, at the
		// quarter of it within the last second.
		want(metered(a), 0.25)
		// The metered scope's learned rate and AIMD ceiling come with it,
		// while the rate holds; a ceiling of zero leaves the held one.
		learned := func(rate, ceiling float64) {
			h.t.Helper()
			h.clock.Advance(100 * ms) // a turn of any of these rates
			d := h.admit(a)
			if d.Rate != rate || d.Ceiling != ceiling {
				h.t.Errorf("at +%v: rate %v, ceiling %v; want %v, %v", h.clock.Now().Sub(Start), d.Rate, d.Ceiling, rate, ceiling)
			}
		}
		learned(0, 0)
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 100, Ceiling: 120, TTL: 10 * s}}})
		learned(100, 120)
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Add: 5, TTL: 10 * s}}})
		learned(105, 120)
		h.clock.Advance(10 * s)
		learned(0, 0) // lapsed, the ceiling with it
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 50, TTL: 10 * s}}})
		learned(50, 0)
	}},
	{"BoundsOfOneTurnKeepTheLeast", func(h *harness) {
		// Bounds of a window's turn (store.Block.Bound): the nearer of two
		// holds while a bound is the block in force; a farther one adds
		// nothing; a wait the server mandated is never shortened by one.
		bound := func(key string, d time.Duration) {
			h.t.Helper()
			h.update(&store.Update{Blocks: []store.Block{{Key: key, For: d, Bound: true}}})
		}
		a := adm(store.ScopeAdmit{Key: "w"})
		bound("w", 3*s)
		bound("w", 2*s)
		h.expect(a, store.Blocked, 2*s, "w", false)
		bound("w", 4*s)
		h.expect(a, store.Blocked, 2*s, "w", false)
		h.clock.Advance(2 * s)
		h.admitted(a)
		bound("w", 5*s) // the next turn's: the last bound has ended
		h.expect(a, store.Blocked, 5*s, "w", false)
		h.clock.Advance(5 * s)

		m := adm(store.ScopeAdmit{Key: "m"})
		h.block("m", 3*s)
		bound("m", 1*s)
		h.expect(m, store.Blocked, 3*s, "m", false)
		bound("m", 4*s) // past the mandate: the bound holds to its end
		h.expect(m, store.Blocked, 4*s, "m", false)
		bound("m", 2*s) // a nearer bound, but the mandate holds to 3s
		h.expect(m, store.Blocked, 3*s, "m", false)
		h.block("m", 1*s) // a shorter wait changes nothing
		h.expect(m, store.Blocked, 3*s, "m", false)
	}},
	{"NonPositiveBlocksAreIgnored", func(h *harness) {
		h.update(&store.Update{Blocks: []store.Block{{Key: "e", For: 0}, {Key: "e", For: -time.Second}}})
		h.admitted(adm(store.ScopeAdmit{Key: "e"}))
	}},
	{"BlockedAdmissionReservesNothing", func(h *harness) {
		paced := store.ScopeAdmit{Key: "paced", Rate: 1, Burst: 1}
		capped := store.ScopeAdmit{Key: "capped", Limit: 1}
		h.block("blocked", 5*s)
		a := adm(paced, capped, store.ScopeAdmit{Key: "blocked"})
		for range 3 {
			h.expect(a, store.Blocked, 5*s, "blocked", false)
		}
		h.clock.Advance(5 * s)
		l := h.admitted(a)
		h.expect(adm(paced), store.Paced, 1*s, "paced", true)
		h.expect(adm(capped), store.Busy, 0, "capped", false)
		h.release(a, l)
		h.admitted(adm(capped))
	}},
	{"BlocksComeBeforeGapsAndCaps", func(h *harness) {
		w := store.ScopeAdmit{Key: "w", Limit: 1, Gap: 2 * s}
		a := adm(w)
		h.release(a, h.admitted(a))
		h.block("w", 1*s)
		h.expect(a, store.Blocked, 1*s, "w", false)
		h.clock.Advance(1 * s)
		h.expect(a, store.Spaced, 1*s, "w", false)
		h.clock.Advance(1 * s)
		l := h.admitted(a)
		h.block("w", 1*s)
		h.expect(a, store.Blocked, 1*s, "w", false) // not Busy
		h.release(a, l)
	}},
	{"CountedWindowGivesWhatIsLeftUntilItTurns", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "w"})
		h.count("w", 1, 5, 2, 3*s)
		h.admitted(a)
		h.clock.Advance(2 * s) // no refill while the window runs
		h.admitted(a)
		h.expect(within(a, 500*ms), store.Paced, 1*s, "w", false)
		h.expect(a, store.Paced, 1*s, "w", true) // booked just after the turn
		h.clock.Advance(1 * s)
		h.admitted(&store.Admission{Scopes: a.Scopes, Paced: true})
		// Turned: the burst is whole again, less the booked turn.
		for range 4 {
			h.admitted(a)
		}
		h.expect(a, store.Paced, 1*s, "w", true)
	}},
	{"CountedWindowEndsItsDebtAtItsTurn", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "w"})
		h.count("w", 1, 5, -2, 3*s)
		h.expect(within(a, time.Second), store.Paced, 3*s, "w", false)
		h.clock.Advance(3 * s)
		for range 5 {
			h.admitted(a) // requests in flight landed in the window they were counted in
		}
		h.expect(a, store.Paced, 1*s, "w", true)
	}},
	{"CountedWindowTakesCharges", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "w"})
		h.count("w", 2, 4, 3, 2*s)
		h.charge("w", 2)
		h.admitted(a)
		bg := &store.Admission{Scopes: a.Scopes, Background: true, Reserve: 0.5}
		h.expect(bg, store.Paced, 2*s, "w", false)
		h.charge("w", -3)
		// 3 left: a background request keeps half the burst for others.
		h.admitted(bg)
		h.expect(bg, store.Paced, 2*s, "w", false)
		h.admitted(a)
		h.admitted(a)
		h.charge("w", 1) // a debt of 1, which ends with the window
		h.expect(within(a, time.Second), store.Paced, 2*s, "w", false)
		h.clock.Advance(2 * s)
		for range 4 {
			h.admitted(a)
		}
		h.expect(a, store.Paced, 500*ms, "w", true)
	}},
	{"CountWithoutUntilEndsACountedWindow", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "w"})
		h.count("w", 1, 5, 0, 10*s)
		h.expect(within(a, time.Second), store.Paced, 10*s, "w", false)
		h.count("w", 1, 5, 0, 0)
		h.expect(a, store.Paced, 1*s, "w", true) // a bucket refills from now
	}},
	{"SlidingLogAdmitsLimitInAnyWindow", func(h *harness) {
		w := store.ScopeAdmit{Key: "log", Limit: 3, Window: 10 * s}
		a := adm(store.ScopeAdmit{Key: "other"}, w)
		var leases []store.Lease
		leases = append(leases, h.admitted(a))
		h.clock.Advance(2 * s)
		leases = append(leases, h.admitted(a), h.admitted(a))
		// Full: the wait is until the oldest place frees, exactly, and it
		// reserves nothing.
		h.expect(a, store.Paced, 8*s, "log", false)
		h.expect(a, store.Paced, 8*s, "log", false)
		for _, l := range leases {
			h.release(a, l) // a release frees no place
		}
		h.expect(a, store.Paced, 8*s, "log", false)
		h.clock.Advance(8*s - ms)
		h.expect(a, store.Paced, ms, "log", false)
		h.clock.Advance(ms)
		h.admitted(a) // one place freed at its instant
		h.expect(a, store.Paced, 2*s, "log", false)
		h.clock.Advance(2 * s)
		h.admitted(a)
		h.admitted(a)
		h.expect(a, store.Paced, 8*s, "log", false)
		h.clock.Advance(10 * s)
		for range 3 {
			h.admitted(a)
		}
		h.expect(a, store.Paced, 10*s, "log", false)
	}},
	{"SlidingLogComesAfterCapsAndBeforePacing", func(h *harness) {
		log := store.ScopeAdmit{Key: "log", Limit: 1, Window: 5 * s}
		capped := store.ScopeAdmit{Key: "capped", Limit: 1}
		paced := store.ScopeAdmit{Key: "paced", Rate: 1, Burst: 1}
		l := h.admitted(adm(capped))
		h.expect(adm(log, capped), store.Busy, 0, "capped", false)
		h.admitted(adm(log)) // a Busy decision took no place
		h.release(adm(capped), l)
		h.expect(adm(paced, log, capped), store.Paced, 5*s, "log", false)
		// A full log reserved no turn: the paced scope admits at once.
		h.admitted(adm(paced))
		h.clock.Advance(5 * s)
		h.admitted(adm(paced, log))
		h.expect(adm(paced, log), store.Paced, 5*s, "log", false)
		h.expect(adm(paced), store.Paced, 1*s, "paced", true) // the log's refusal booked no turn
	}},
	{"SlidingLogsWaitForTheFullest", func(h *harness) {
		short := store.ScopeAdmit{Key: "short", Limit: 2, Window: 2 * s}
		long := store.ScopeAdmit{Key: "long", Limit: 2, Window: 60 * s}
		a := adm(short, long)
		h.admitted(a)
		h.admitted(a)
		h.expect(a, store.Paced, 60*s, "long", false)
		h.expect(adm(short), store.Paced, 2*s, "short", false)
		h.clock.Advance(2 * s)
		h.admitted(adm(short))
		h.expect(a, store.Paced, 58*s, "long", false)
	}},
	{"GapStartsAtRelease", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "issue 7", Gap: 2 * s})
		l1 := h.admitted(a)
		l2 := h.admitted(a) // without Limit, the gap spaces releases only
		if l1 == 0 || l2 == 0 || l1 == l2 {
			h.t.Fatalf("leases %d and %d: want two distinct leases for a scope with a gap", l1, l2)
		}
		h.release(a, l1)
		h.expect(a, store.Spaced, 2*s, "issue 7", false)
		h.clock.Advance(500 * ms)
		h.expect(a, store.Spaced, 1500*ms, "issue 7", false)
		h.release(a, l2) // a later release extends the gap
		h.expect(a, store.Spaced, 2*s, "issue 7", false)
		h.release(a, l2) // a second release of one lease does nothing
		h.clock.Advance(1 * s)
		h.release(a, l1)
		h.expect(a, store.Spaced, 1*s, "issue 7", false)
		h.clock.Advance(1 * s)
		h.release(a, h.admitted(a))
		h.expect(a, store.Spaced, 2*s, "issue 7", false)
	}},
	{"LearnedRateSupersedesGap", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "issue 7", Gap: 2 * s})
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "issue 7", Rate: 10, TTL: 10 * s}}})
		h.release(a, h.admitted(a))
		h.expect(a, store.Paced, 100*ms, "issue 7", true) // paced, not spaced
		h.clock.Advance(10 * s)                           // the learned rate lapses
		h.release(a, h.admitted(a))
		h.expect(a, store.Spaced, 2*s, "issue 7", false)
	}},
	{"LongestGapOfSeveralScopesWins", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "short", Gap: 1 * s}, store.ScopeAdmit{Key: "long", Gap: 3 * s}, store.ScopeAdmit{Key: "none"})
		h.release(a, h.admitted(a))
		h.expect(a, store.Spaced, 3*s, "long", false)
		h.expect(adm(store.ScopeAdmit{Key: "short"}), store.Spaced, 1*s, "short", false)
		h.admitted(adm(store.ScopeAdmit{Key: "none"}))
	}},
	{"ReleaseOfUnknownLeaseDoesNothing", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "w", Gap: s, Limit: 1})
		h.release(a, 0)
		h.release(a, 12345)
		h.release(a, 1<<63|12345)
		l := h.admitted(a)
		h.expect(a, store.Busy, 0, "w", false)
		h.release(a, l)
		h.expect(a, store.Spaced, s, "w", false)
	}},
	{"ConcurrencyCap", func(h *harness) {
		tenant := store.ScopeAdmit{Key: "tenant", Limit: 2}
		a := adm(store.ScopeAdmit{Key: "endpoint"}, tenant)
		l1, l2 := h.admitted(a), h.admitted(a)
		if l1 == 0 || l2 == 0 || l1 == l2 {
			h.t.Fatalf("leases %d and %d: want two distinct leases", l1, l2)
		}
		h.expect(a, store.Busy, 0, "tenant", false)
		h.expect(a, store.Busy, 0, "tenant", false)
		h.release(a, l1)
		l3 := h.admitted(a)
		h.expect(a, store.Busy, 0, "tenant", false)
		h.release(a, l2)
		h.release(a, l3)
		h.admitted(a)
		h.admitted(a)
	}},
	{"BusyAdmissionTakesNoSlotsOrPacing", func(h *harness) {
		tenant := store.ScopeAdmit{Key: "tenant", Limit: 5}
		one := store.ScopeAdmit{Key: "one", Limit: 1}
		paced := store.ScopeAdmit{Key: "paced", Rate: 1, Burst: 2}
		held := h.admitted(adm(one))
		for range 10 {
			h.expect(adm(tenant, paced, one), store.Busy, 0, "one", false)
		}
		for range 5 {
			h.admitted(adm(tenant))
		}
		h.expect(adm(tenant), store.Busy, 0, "tenant", false)
		h.release(adm(one), held)
		h.admitted(adm(paced))
		h.admitted(adm(paced))
		h.expect(adm(paced), store.Paced, 1*s, "paced", true)
	}},
	{"LeasesExpire", func(h *harness) {
		a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}}, LeaseTTL: s}
		h.admitted(a) // never released: its process died
		h.clock.Advance(999 * ms)
		h.expect(a, store.Busy, 0, "tenant", false)
		h.clock.Advance(1 * ms)
		l := h.admitted(a)
		h.clock.Advance(500 * ms)
		h.expect(a, store.Busy, 0, "tenant", false)
		h.release(a, l)
		h.admitted(a)
	}},
	{"LeasesAreDistinct", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "tenant", Limit: 1000})
		seen := make(map[store.Lease]bool)
		for range 100 {
			l := h.admitted(a)
			if l == 0 || seen[l] {
				h.t.Fatalf("Admit = lease %d, want a new non-zero lease", l)
			}
			seen[l] = true
		}
	}},
	{"PacingBurstThenSteadyRate", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "e", Rate: 10, Burst: 3})
		for range 3 {
			h.admitted(a)
		}
		paced := &store.Admission{Scopes: a.Scopes, Paced: true}
		for range 5 {
			h.expect(a, store.Paced, 100*ms, "e", true)
			h.clock.Advance(100 * ms)
			h.admitted(paced)
		}
		h.clock.Advance(10 * s) // quiet: the burst is back, no more
		for range 3 {
			h.admitted(a)
		}
		h.expect(a, store.Paced, 100*ms, "e", true)
		h.expect(a, store.Paced, 200*ms, "e", true) // waiters queue in order
		h.expect(a, store.Paced, 300*ms, "e", true)
	}},
	{"PacingWaitsAreExact", func(h *harness) {
		a := adm(store.ScopeAdmit{Key: "e", Rate: 3})
		h.admitted(a)
		third := span(1, 3)
		h.expect(a, store.Paced, third, "e", true)
		h.expect(a, store.Paced, 2*third, "e", true)
		h.clock.Advance(time.Microsecond)
		h.expect(a, store.Paced, 3*third-time.Microsecond, "e", true)
	}},
	{"CostWeighsPacing", func(h *harness) {
		big := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tokens", Rate: 10, Burst: 5}}, Cost: 5}
		h.admitted(big)
		small := &store.Admission{Scopes: big.Scopes, Cost: 2}
		h.expect(small, store.Paced, 200*ms, "tokens", true)
		h.expect(adm(big.Scopes...), store.Paced, 300*ms, "tokens", true) // zero cost is 1
		half := &store.Admission{Scopes: big.Scopes, Cost: 0.5}
		h.expect(half, store.Paced, 350*ms, "tokens", true)
	}},
	{"ScopeCostOverridesRequestCost", func(h *harness) {
		requests := store.ScopeAdmit{Key: "requests", Rate: 10, Burst: 2}
		tokens := store.ScopeAdmit{Key: "tokens", Rate: 100, Burst: 100, Cost: 60}
		a := adm(requests, tokens)
		h.admitted(a)
		h.expect(a, store.Paced, 200*ms, "tokens", true)
		// requests was charged one unit at the common send time.
		h.expect(adm(requests), store.Paced, 200*ms, "requests", true)
	}},
	{"BackgroundNeverBooksAhead", func(h *harness) {
		sc := []store.ScopeAdmit{{Key: "e", Rate: 10, Burst: 2}}
		bg := &store.Admission{Scopes: sc, Background: true}
		h.admitted(bg)
		h.admitted(bg)
		h.expect(bg, store.Paced, 100*ms, "e", false)
		h.expect(bg, store.Paced, 100*ms, "e", false)
		h.expect(adm(sc...), store.Paced, 100*ms, "e", true)
		h.expect(bg, store.Paced, 200*ms, "e", false)
		h.clock.Advance(200 * ms)
		h.admitted(bg)
	}},
	{"BackgroundLeavesTheReserve", func(h *harness) {
		sc := []store.ScopeAdmit{{Key: "e", Rate: 10, Burst: 4}}
		bg := &store.Admission{Scopes: sc, Background: true, Reserve: 0.5}
		h.admitted(bg)
		h.admitted(bg)
		h.expect(bg, store.Paced, 100*ms, "e", false) // half the burst is kept
		h.admitted(adm(sc...))
		h.admitted(adm(sc...))
		h.expect(adm(sc...), store.Paced, 100*ms, "e", true)
	}},
	{"FasterLearnedRateKeepsBookedTurns", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 1, Burst: 1}
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 1*s, "e", true)
		h.expect(adm(sc), store.Paced, 2*s, "e", true)
		// Three units of debt, 3s at 1/s, would be 750ms at 4/s; but the
		// two waiters hold the turns booked at 1s and 2s, so the next turn
		// is one new interval after the last of them: 2.25s, not a turn
		// that lands on top of theirs.
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 4, Default: 1, TTL: time.Minute}}})
		h.expect(adm(sc), store.Paced, 2250*ms, "e", true)
		// A slower rate and a faster one again, before anyone books: the
		// next turn is one interval of the last after the turn last booked
		// (2.25s), not on top of it, as counts answered at one instant
		// set (a race: two requests went at one turn with 1 left).
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 2, TTL: time.Minute}}})
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 4, TTL: time.Minute}}})
		h.expect(adm(sc), store.Paced, 2500*ms, "e", true)
		// A slower rate applies from the next turn on: one new interval
		// after the last booked.
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 2, TTL: time.Minute}}})
		h.expect(adm(sc), store.Paced, 3*s, "e", true)
	}},
	{"ServerCountReplacesTheDebt", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 1, Burst: 1}
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 1*s, "e", true)
		// The server says 3 more may go now: its count replaces the debt
		// (a turn already booked stays booked, as the reserve that sets
		// Free allows for).
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 1, Burst: 10, Free: 3, HasFree: true, TTL: time.Minute}}})
		h.admitted(adm(sc))
		h.admitted(adm(sc))
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 1*s, "e", true)
		// Nothing free: the next goes one interval after the last booked.
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 1, Burst: 10, Free: 0, HasFree: true, TTL: time.Minute}}})
		h.expect(adm(sc), store.Paced, 1*s, "e", true)
		// Less than nothing: requests in flight will take more than the
		// server has left, and the debt is paid off before the next.
		h.clock.Advance(time.Minute)
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 1, Burst: 10, Free: -2, HasFree: true, TTL: time.Minute}}})
		h.expect(adm(sc), store.Paced, 3*s, "e", true)
		// More than the burst is clamped to it.
		h.clock.Advance(time.Minute)
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 1, Burst: 2, Free: 50, HasFree: true, TTL: time.Minute}}})
		h.admitted(adm(sc))
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 1*s, "e", true)
	}},
	{"CutsOfOneEventApplyOnce", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 10, Burst: 1}
		cut := func(sentAgo time.Duration) *store.Update {
			return &store.Update{Rates: []store.RateUpdate{{Key: "e", Factor: 0.5, Burst: 1, TTL: time.Minute, Event: h.clock.Now().Add(-sentAgo)}}}
		}
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 8, Burst: 1, TTL: time.Minute}}})
		h.update(cut(time.Millisecond))
		// Another caller's 429 of a request sent before that cut: the same
		// event, already cut for.
		h.update(cut(2 * time.Millisecond))
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 250*ms, "e", true) // 4 a second, not 2
		// A request sent after the cut is refused: a new event.
		h.clock.Advance(time.Second)
		h.update(cut(time.Millisecond))
		h.clock.Advance(time.Second)
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 500*ms, "e", true) // 2 a second
	}},
	{"ScopeNamedTwiceIsChargedTwice", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 10, Burst: 1}
		h.admitted(adm(sc, sc))
		h.expect(adm(sc), store.Paced, 200*ms, "e", true)
	}},
	{"PacedAdmissionIsNotChargedAgain", func(h *harness) {
		sc := []store.ScopeAdmit{{Key: "e", Rate: 1, Burst: 1}, {Key: "tenant", Limit: 1}}
		h.admitted(adm(sc[0]))
		paced := &store.Admission{Scopes: sc, Paced: true}
		l := h.admitted(paced)
		if l == 0 {
			h.t.Errorf("paced Admit = no lease, want a lease for a scope with a Limit")
		}
		h.expect(paced, store.Busy, 0, "tenant", false) // caps still apply
		h.expect(adm(sc[0]), store.Paced, 1*s, "e", true)
	}},
	{"MaxWaitReservesNothing", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 1, Burst: 1}
		h.admitted(adm(sc))
		short := &store.Admission{Scopes: []store.ScopeAdmit{sc}, MaxWait: 500 * ms}
		h.expect(short, store.Paced, 1*s, "e", false)
		h.expect(short, store.Paced, 1*s, "e", false)
		exact := &store.Admission{Scopes: []store.ScopeAdmit{sc}, MaxWait: 1 * s}
		h.expect(exact, store.Paced, 1*s, "e", true)
		h.expect(adm(sc), store.Paced, 2*s, "e", true)
		h.expect(exact, store.Paced, 3*s, "e", false)
	}},
	{"SlowestScopeSetsTheSendTimeOfAll", func(h *harness) {
		slow := store.ScopeAdmit{Key: "slow", Rate: 1, Burst: 1}
		fast := store.ScopeAdmit{Key: "fast", Rate: 10, Burst: 1}
		a := adm(fast, slow)
		h.admitted(a)
		h.expect(a, store.Paced, 1*s, "slow", true)
		// fast was reserved at the common send time, 1s from now.
		h.expect(adm(fast), store.Paced, 1100*ms, "fast", true)
		short := &store.Admission{Scopes: a.Scopes, MaxWait: 1500 * ms}
		h.expect(short, store.Paced, 2*s, "slow", false)
		h.expect(adm(fast), store.Paced, 1200*ms, "fast", true) // nothing was reserved in fast
	}},
	{"LearnedRateOverridesDefaultUntilItExpires", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 100, Burst: 1}
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 2, TTL: 10 * s}}})
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 500*ms, "e", true)
		h.clock.Advance(10 * s) // the learned rate holds until, not at, its TTL
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 10*ms, "e", true)
	}},
	{"LapsedRateLeavesNoDebt", func(h *harness) {
		// A rate booked turns past its end (a window's rest spread until
		// its reset): once it lapses they are not owed, neither to a rate
		// learned later nor to the admission's default.
		for _, def := range []float64{0, 100} {
			key := fmt.Sprintf("lapse %v", def)
			sc := store.ScopeAdmit{Key: key, Rate: def, Burst: 1}
			h.update(&store.Update{Rates: []store.RateUpdate{{Key: key, Rate: 1, Burst: 1, TTL: 2 * s}}})
			h.admitted(adm(sc))
			h.expect(adm(sc), store.Paced, 1*s, key, true)
			h.expect(adm(sc), store.Paced, 2*s, key, true) // booked up to 3 s
			h.clock.Advance(2 * s)                         // the rate lapses, 1 s of turns still booked
			if def > 0 {
				h.admitted(adm(sc))
				h.expect(adm(sc), store.Paced, 10*ms, key, true) // the default's own pace, no debt
				h.clock.Advance(20 * ms)
			}
			h.update(&store.Update{Rates: []store.RateUpdate{{Key: key, Rate: 10, Burst: 1, TTL: time.Minute}}})
			h.admitted(adm(sc))
			h.expect(adm(sc), store.Paced, 100*ms, key, true)
		}
	}},
	{"LearnedBurst", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 1, Burst: 10}
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 10, Burst: 3, TTL: time.Minute}}})
		for range 3 {
			h.admitted(adm(sc))
		}
		h.expect(adm(sc), store.Paced, 100*ms, "e", true)
	}},
	{"SmallerLearnedBurstForgivesDebt", func(h *harness) {
		sc := store.ScopeAdmit{Key: "e", Rate: 1, Burst: 1}
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 10, Burst: 5, TTL: time.Minute}}})
		for range 5 {
			h.admitted(adm(sc))
		}
		// 500ms of debt under burst 5; burst 2 allows 200ms at most.
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 10, Burst: 2, TTL: time.Minute}}})
		h.expect(adm(sc), store.Paced, 100*ms, "e", true)
	}},
	{"ChargesReconcileLearnedPacing", func(h *harness) {
		sc := store.ScopeAdmit{Key: "tokens", Rate: 100, Burst: 1}
		charge := func(cost float64) {
			h.update(&store.Update{Charges: []store.Charge{{Key: "tokens", Cost: cost}, {Key: "unknown", Cost: cost}}})
		}
		charge(50) // no learned rate: left alone
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 10*ms, "tokens", true)
		h.clock.Advance(time.Second)
		h.update(&store.Update{Rates: []store.RateUpdate{{Key: "tokens", Rate: 10, TTL: time.Minute}}})
		h.admitted(adm(sc))
		charge(3) // the request cost 4, not 1
		h.expect(adm(sc), store.Paced, 400*ms, "tokens", true)
		charge(-2)
		h.expect(adm(sc), store.Paced, 300*ms, "tokens", true)
		charge(-10) // a refund brings the debt to none, not below
		h.admitted(adm(sc))
		h.expect(adm(sc), store.Paced, 100*ms, "tokens", true)
	}},
	{"RateUpdateArithmetic", runRateUpdates},
	{"UpdatesOfSeveralScopesAtOnce", func(h *harness) {
		h.update(&store.Update{
			Blocks: []store.Block{{Key: "a", For: s}, {Key: "b", For: 2 * s}},
			Rates:  []store.RateUpdate{{Key: "a", Rate: 1, TTL: time.Minute}, {Key: "c", Rate: 4, TTL: time.Minute}},
		})
		h.expect(adm(store.ScopeAdmit{Key: "a"}, store.ScopeAdmit{Key: "b"}), store.Blocked, 2*s, "b", false)
		h.admitted(adm(store.ScopeAdmit{Key: "c"}))
		h.expect(adm(store.ScopeAdmit{Key: "c"}), store.Paced, 250*ms, "c", true)
		h.clock.Advance(s)
		h.admitted(adm(store.ScopeAdmit{Key: "a"}))
		h.expect(adm(store.ScopeAdmit{Key: "a"}), store.Paced, s, "a", true)
	}},
	{"CanceledContext", func(h *harness) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := h.s.Admit(ctx, adm(store.ScopeAdmit{Key: "e", Limit: 1})); err == nil {
			h.t.Errorf("Admit with a canceled context: nil error, want one")
		}
		h.admitted(adm(store.ScopeAdmit{Key: "e", Limit: 1}))
	}},
	{"ConcurrentAdmissionsRespectTheCap", func(h *harness) {
		const limit, workers, rounds = 3, 8, 25
		a := adm(store.ScopeAdmit{Key: "tenant", Limit: limit}, store.ScopeAdmit{Key: "e", Rate: 1e6, Burst: 1e6})
		var held, peak, admitted atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range rounds {
					d, err := h.s.Admit(context.Background(), a)
					if err != nil {
						h.t.Errorf("Admit error: %v", err)
						return
					}
					if d.Reason != store.Admitted {
						continue
					}
					admitted.Add(1)
					n := held.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					held.Add(-1)
					if err := h.s.Release(context.Background(), a, d.Lease); err != nil {
						h.t.Errorf("Release error: %v", err)
					}
				}
			})
		}
		wg.Wait()
		if p := peak.Load(); p > limit {
			h.t.Errorf("%d requests held the scope at once, want at most %d", p, limit)
		}
		if admitted.Load() < limit {
			h.t.Errorf("%d admissions, want at least %d", admitted.Load(), limit)
		}
		for range limit {
			h.admitted(a) // every lease was given back
		}
	}},
}

// runRateUpdates applies sequences of RateUpdates and reads the resulting
// rate back from the pacing wait it imposes (burst 1: the second request
// waits one unit's span).
func runRateUpdates(h *harness) {
	const def = 1000.0 // the scope's default rate
	for i, tc := range []struct {
		name    string
		updates []store.RateUpdate
		advance time.Duration // before the last update
		want    float64
	}{
		{"Rate sets", []store.RateUpdate{{Rate: 4}}, 0, 4},
		{"Factor scales the learned rate", []store.RateUpdate{{Rate: 4}, {Factor: 0.5}}, 0, 2},
		{"Add adds", []store.RateUpdate{{Rate: 4}, {Add: 1}}, 0, 5},
		{"Factor then Add", []store.RateUpdate{{Rate: 4}, {Factor: 0.5, Add: 1}}, 0, 3},
		{"Default when none is learned", []store.RateUpdate{{Default: 8, Factor: 0.5}}, 0, 4},
		{"Default when the learned rate expired", []store.RateUpdate{{Rate: 4, TTL: s}, {Default: 10, Factor: 0.5}}, s, 5},
		{"Max clamps", []store.RateUpdate{{Rate: 50, Max: 20}}, 0, 20},
		{"Min clamps", []store.RateUpdate{{Rate: 4}, {Factor: 0.1, Min: 2}}, 0, 2},
		{"Rate wins over Factor", []store.RateUpdate{{Rate: 4}, {Rate: 5, Factor: 10}}, 0, 5},
		{"Repeated decrease", []store.RateUpdate{{Rate: 16}, {Factor: 0.5}, {Factor: 0.5}, {Factor: 0.5}}, 0, 2},
		{"Non-positive result leaves the default", []store.RateUpdate{{Rate: 4}, {Add: -10}}, 0, def},
	} {
		key := "rates " + string(rune('a'+i))
		for j, u := range tc.updates {
			if j == len(tc.updates)-1 {
				h.clock.Advance(tc.advance)
			}
			u.Key = key
			if u.TTL == 0 {
				u.TTL = time.Hour
			}
			h.update(&store.Update{Rates: []store.RateUpdate{u}})
		}
		a := adm(store.ScopeAdmit{Key: key, Rate: def, Burst: 1})
		h.admitted(a)
		d := h.admit(a)
		if want := span(1, tc.want); d.Reason != store.Paced || d.Wait != want {
			h.t.Errorf("%s: second Admit = %s, want paced for %v (rate %v)", tc.name, describe(d), want, tc.want)
		}
	}
}
