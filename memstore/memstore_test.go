package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/store"
)

func admit(t *testing.T, s store.Store, a *store.Admission) store.Decision {
	t.Helper()
	d, err := s.Admit(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Idle scopes are evicted: a million distinct paths leave the store small.
func TestMemoryStoreStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a million admissions")
	}
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		peak := 0
		for i := range 1_000_000 {
			a := &store.Admission{Scopes: []store.ScopeAdmit{
				{Key: "tenant t", Limit: 8},
				{Key: fmt.Sprintf("endpoint t GET /files/f%dx", i), Rate: 100, Burst: 100},
			}}
			d := admit(t, s, a)
			if d.Reason != store.Admitted {
				t.Fatalf("admission %d: %v, want admitted", i, d.Reason)
			}
			if err := s.Release(context.Background(), a, d.Lease); err != nil {
				t.Fatal(err)
			}
			if i%1000 == 999 {
				time.Sleep(time.Second) // let pacing debts lapse
				peak = max(peak, s.Len())
			}
		}
		if peak > 4096 {
			t.Errorf("store held %d scopes at its peak, want it bounded by eviction", peak)
		}
	})
}

// Blocks merge by maximum: a shorter block never shortens a longer one.
func TestMemoryStoreBlocksMergeByMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		ctx := context.Background()
		_ = s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "e", For: 10 * time.Second}}})
		_ = s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "e", For: 2 * time.Second}}})
		d := admit(t, s, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "g"}, {Key: "e"}}})
		if d.Reason != store.Blocked || d.Wait != 10*time.Second || d.Scope != "e" {
			t.Errorf("Admit = %+v, want blocked on e for 10s", d)
		}
	})
}

// A pacing wait beyond MaxWait reserves nothing.
func TestMemoryStoreMaxWaitReservesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 1, Burst: 1}}, MaxWait: 500 * time.Millisecond}
		if d := admit(t, s, a); d.Reason != store.Admitted {
			t.Fatalf("first: %v", d.Reason)
		}
		before, _ := s.Snapshot("e")
		d := admit(t, s, a)
		after, _ := s.Snapshot("e")
		if d.Reason != store.Paced || d.Reserved || d.Wait != time.Second || !after.TAT.Equal(before.TAT) {
			t.Errorf("Admit = %+v, TAT moved %v; want a 1s pacing wait, not reserved", d, after.TAT.Sub(before.TAT))
		}
	})
}

// Learned rates override defaults until they expire; AIMD updates compose.
func TestMemoryStoreLearnedRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		ctx := context.Background()
		_ = s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: "e", Factor: 0.5, Default: 10, TTL: time.Minute}}})
		if snap, _ := s.Snapshot("e"); snap.Rate != 5 {
			t.Errorf("after halving the default 10, rate = %v, want 5", snap.Rate)
		}
		_ = s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: "e", Add: 1, Max: 5.5, Default: 10, TTL: time.Minute}}})
		if snap, _ := s.Snapshot("e"); snap.Rate != 5.5 {
			t.Errorf("after adding 1 capped at 5.5, rate = %v, want 5.5", snap.Rate)
		}
		time.Sleep(time.Minute)
		if snap, _ := s.Snapshot("e"); snap.Rate != 0 {
			t.Errorf("after the TTL, learned rate = %v, want forgotten", snap.Rate)
		}
	})
}

// Learned state is bounded by count: a flood of distinct endpoints, each
// with a rate of its own, leaves at most MaxScopes scopes, and the scope in
// constant use keeps its rate.
func TestLearnedStateHasACeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &memstore.Store{MaxScopes: 4096}
		ctx := context.Background()
		hot := "t GET /hot"
		_ = s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: hot, Rate: 7, Burst: 1, TTL: 24 * time.Hour}}})
		peak := 0
		for i := range 50_000 {
			key := fmt.Sprintf("t GET /cold/%d", i)
			_ = s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: key, Rate: 5, Burst: 1, TTL: time.Hour}}})
			d, err := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: hot}}})
			if err != nil || d.Reason == store.Blocked {
				t.Fatalf("admit hot: %v %v", d, err)
			}
			time.Sleep(150 * time.Millisecond) // the hot scope is paced at 7/s
			peak = max(peak, s.Len())
		}
		if peak > 4096 {
			t.Errorf("the store held %d scopes at its peak, want at most MaxScopes, 4096", peak)
		}
		if snap, ok := s.Snapshot(hot); !ok || snap.Rate != 7 {
			t.Errorf("the hot scope's rate = %+v, %v after the flood, want its 7/s kept", snap, ok)
		}
	})
}

// A lease taken without a LeaseTTL is held until it is released, however
// long its request runs: the cap holds for a request of ten minutes.
func TestLeaseHeldUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		ctx := context.Background()
		a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}}}
		d := admit(t, s, a)
		time.Sleep(10 * time.Minute)
		if d2 := admit(t, s, a); d2.Reason != store.Busy {
			t.Errorf("a second request after 10 minutes = %v, want busy: the first still holds its slot", d2.Reason)
		}
		if err := s.Release(ctx, a, d.Lease); err != nil {
			t.Fatal(err)
		}
		if d3 := admit(t, s, a); d3.Reason != store.Admitted {
			t.Errorf("after the release = %v, want admitted", d3.Reason)
		}
	})
}

// An admission that brings the caller's reading of the clock is decided
// at it: a block that ends a second after it waits a second, though the
// clock has moved on since. A store given a clock of its own reads that.
func TestMemoryStoreDecidesAtTheCallersClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		ctx := context.Background()
		read := time.Now()
		_ = s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "e", For: time.Second}}})
		time.Sleep(400 * time.Millisecond)
		a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e"}}, Now: read}
		if d := admit(t, s, a); d.Reason != store.Blocked || d.Wait != time.Second {
			t.Errorf("at the caller's clock: %+v, want blocked for 1s", d)
		}
		a.Now = time.Time{}
		if d := admit(t, s, a); d.Reason != store.Blocked || d.Wait != 600*time.Millisecond {
			t.Errorf("at the store's read: %+v, want blocked for 600ms", d)
		}
		own := memstore.New()
		own.Now = func() time.Time { return read.Add(900 * time.Millisecond) }
		_ = own.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "e", For: time.Second}}})
		a.Now = read
		if d := admit(t, own, a); d.Reason != store.Blocked || d.Wait != time.Second {
			t.Errorf("with a clock of its own: %+v, want blocked for 1s", d)
		}
	})
}

// A lease with a TTL still expires after leases without one were taken
// and released around it: the count of expiring leases stays right.
func TestLeaseWithATTLExpiresAmongOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New()
		ctx := context.Background()
		plain := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "t", Limit: 2}}}
		timed := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "t", Limit: 2}}, LeaseTTL: time.Second}
		p := admit(t, s, plain)
		admit(t, s, timed)
		_ = s.Release(ctx, plain, p.Lease)
		admit(t, s, plain)
		if d := admit(t, s, plain); d.Reason != store.Busy {
			t.Fatalf("third lease of two: %+v, want busy", d)
		}
		time.Sleep(time.Second - time.Millisecond)
		if d := admit(t, s, plain); d.Reason != store.Busy {
			t.Errorf("a millisecond before the timed lease expires: %+v, want busy", d)
		}
		time.Sleep(time.Millisecond)
		if d := admit(t, s, plain); d.Reason != store.Admitted {
			t.Errorf("after the timed lease expired: %+v, want admitted", d)
		}
	})
}

// A scope named twice in one admission takes one concurrency slot, and
// the release gives it back.
func TestScopeNamedTwiceTakesOneSlot(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "t", Limit: 2}, {Key: "t", Limit: 2}}}
	d, err := s.Admit(ctx, a)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("first: %+v, %v", d, err)
	}
	if snap, _ := s.Snapshot("t"); snap.Leases != 1 {
		t.Errorf("leases after one admission = %d, want 1", snap.Leases)
	}
	if err := s.Release(ctx, a, d.Lease); err != nil {
		t.Fatal(err)
	}
	if snap, _ := s.Snapshot("t"); snap.Leases != 0 {
		t.Errorf("leases after its release = %d, want 0", snap.Leases)
	}
}

// A scope dropped from the store and made again under the same key string
// is found anew, not through the hint of the dropped one.
func TestDroppedScopeIsNotFoundByItsHint(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	s := &memstore.Store{Now: func() time.Time { return clock }, MaxScopes: 4}
	ctx := context.Background()
	key := string([]byte("endpoint k")) // one string, whose bytes the hint remembers
	admit := func(k string) {
		t.Helper()
		if _, err := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: k}}}); err != nil {
			t.Fatal(err)
		}
	}
	admit(key)
	admit(key)         // found again: through its hint
	for i := range 8 { // newer scopes push the idle one out
		clock = clock.Add(time.Second)
		admit(fmt.Sprint("other ", i))
	}
	if _, held := s.Snapshot(key); held {
		t.Fatalf("%q still held after 8 newer scopes in a store of 4", key)
	}
	if err := s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: key, For: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	if snap, held := s.Snapshot(key); !held || !snap.BlockedUntil.Equal(clock.Add(time.Minute)) {
		t.Errorf("after a block: %+v (held %v), want blocked until %v", snap, held, clock.Add(time.Minute))
	}
	d, err := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: key}}})
	if err != nil || d.Reason != store.Blocked || d.Wait != time.Minute {
		t.Errorf("admission after the block: %+v, %v; want blocked for 1m", d, err)
	}
}

// A scope named by admission after admission is moved to the front of the
// order of use at most once every 100ms, not by each: one in use keeps
// its learned rate through a flood of new scopes that fills the store
// many times over between its moves, and the store stays at MaxScopes.
func TestScopeInUseOutlivesAFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &memstore.Store{MaxScopes: 32}
		ctx := context.Background()
		hot := "t GET /hot"
		_ = s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: hot, Rate: 1e6, Burst: 1e6, TTL: 24 * time.Hour}}})
		peak := 0
		for i := range 20_000 {
			key := fmt.Sprintf("t GET /cold/%d", i)
			_ = s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: key, Rate: 5, Burst: 1, TTL: time.Hour}}})
			if d := admit(t, s, &store.Admission{Scopes: []store.ScopeAdmit{{Key: hot}}}); d.Reason != store.Admitted {
				t.Fatalf("admit hot: %+v", d)
			}
			time.Sleep(time.Millisecond) // 100 new scopes between two moves of the hot one
			peak = max(peak, s.Len())
		}
		if peak > 32 {
			t.Errorf("the store held %d scopes at its peak, want at most MaxScopes, 32", peak)
		}
		if snap, ok := s.Snapshot(hot); !ok || snap.Rate != 1e6 {
			t.Errorf("the hot scope's rate = %+v, %v after the flood, want it kept", snap, ok)
		}
	})
}

// Until anything could hold an admission back, an admission that asks for
// nothing takes no lock and makes no scope; the first that asks for
// something, or an Update, ends that, and blocks hold from then on.
func TestAdmitWithNothingToEnforce(t *testing.T) {
	ctx := context.Background()
	s := &memstore.Store{}
	plain := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "g"}, {Key: "t"}, {Key: "t GET /x"}}}
	for range 3 {
		if d := admit(t, s, plain); d.Reason != store.Admitted {
			t.Fatalf("plain admission: %v, want admitted", d.Reason)
		}
	}
	if n := s.Len(); n != 0 {
		t.Errorf("%d scopes after admissions that asked for nothing, want none", n)
	}
	if err := s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "t", For: time.Hour}}}); err != nil {
		t.Fatal(err)
	}
	if d := admit(t, s, plain); d.Reason != store.Blocked || d.Scope != "t" {
		t.Errorf("after a block of t: %v on %q, want blocked on t", d.Reason, d.Scope)
	}
	// A fresh store: a slot taken is held, and the next asks the lock.
	s = &memstore.Store{}
	capped := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "t", Limit: 1}}}
	if d := admit(t, s, capped); d.Reason != store.Admitted {
		t.Fatalf("first capped: %v", d.Reason)
	}
	if d := admit(t, s, capped); d.Reason != store.Busy {
		t.Errorf("second capped: %v, want busy", d.Reason)
	}
}
