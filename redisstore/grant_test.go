package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

// leaseStore returns a Store in lease mode on srv with clock, and the
// count of its round trips on a request's path.
func leaseStore(t *testing.T, srv *redistest.Server, prefix string, clock *storetest.Clock, batch int) (*Store, *trips) {
	c, cnt := countedClient(t, srv)
	s := New(c, Config{Prefix: prefix, Now: clock.Now, Timeout: 5 * time.Second, Batch: batch,
		OnHealth: func(e HealthEvent) { t.Errorf("store left Redis: %v", e.Err) }})
	s.renewEvery = time.Hour // renewed by hand
	t.Cleanup(func() { s.Close() })
	return s, cnt
}

// Lease mode books turns in batches that double while they are used up
// within the horizon, up to Batch: 1,000 admissions of a scope that
// nothing slows take 1+2+...+64 and then 64 a call, 21 calls, not 1,000.
func TestGrantsBatchTurns(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	s, cnt := leaseStore(t, srv, redistest.Prefix(t), clock, 64)
	a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "global"}, {Key: "tenant"}, {Key: "tenant GET /x", Rate: 1e9, Burst: 1e9}}}
	for i := range 1000 {
		if d, err := s.Admit(pathCtx, a); err != nil || d.Reason != store.Admitted || d.Lease != 0 {
			t.Fatalf("admission %d = %+v, %v; want admitted, no lease", i, d, err)
		}
		if i == 0 {
			cnt.n.Store(0) // the first loads the script
		}
	}
	// After the first, 2+4+8+16+32 = 62 in 5 calls, then 937 in
	// ceil(937/64) = 15.
	if got := cnt.n.Load(); got != 20 {
		t.Errorf("round trips = %d; want 20", got)
	}
}

// Where the rate binds, no turn is due at once and lease mode decides per
// request: two Stores (two processes) sharing a 100/s scope with a burst
// of 1, each asking greedily every millisecond for 10 s, are admitted
// exactly the scope's 1,000 turns (one per 10 ms), no second holds more
// than 100, and neither starves.
func TestGrantsNeverExceedTheRate(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	var stores [2]*Store
	for i := range stores {
		stores[i], _ = leaseStore(t, srv, prefix, clock, 16)
	}
	adm := func() *store.Admission {
		return &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 8}, {Key: "tenant GET /x", Rate: 100, Burst: 1}}}
	}
	type waiter struct {
		a   *store.Admission
		due time.Time
	}
	var (
		admitted [2]int
		sent     []time.Time
		pending  [2][]waiter
	)
	start := clock.Now()
	for clock.Now().Sub(start) < 10*time.Second {
		for i, s := range stores {
			// Those whose reserved turn has come are admitted now.
			rest := pending[i][:0]
			for _, w := range pending[i] {
				if clock.Now().Before(w.due) {
					rest = append(rest, w)
					continue
				}
				w.a.Paced = true
				d, err := s.Admit(context.Background(), w.a)
				if err != nil || d.Reason != store.Admitted {
					t.Fatalf("reserved admission = %+v, %v; want admitted", d, err)
				}
				admitted[i]++
				sent = append(sent, clock.Now())
				s.Release(context.Background(), w.a, d.Lease)
			}
			pending[i] = rest
			if len(pending[i]) > 0 {
				continue // one request at a time per process
			}
			a := adm()
			d, err := s.Admit(context.Background(), a)
			switch {
			case err != nil:
				t.Fatal(err)
			case d.Reason == store.Admitted:
				admitted[i]++
				sent = append(sent, clock.Now())
				s.Release(context.Background(), a, d.Lease)
			case d.Reason == store.Paced && d.Reserved:
				pending[i] = append(pending[i], waiter{a, clock.Now().Add(d.Wait)})
			}
		}
		clock.Advance(time.Millisecond)
	}
	total := admitted[0] + admitted[1]
	if total != 1000 {
		t.Errorf("admitted %d in 10 s at 100/s, burst 1; want 1000 (%v)", total, admitted)
	}
	for i, n := range admitted {
		if n < 300 {
			t.Errorf("store %d admitted %d of %d: starved", i, n, total)
		}
	}
	// No second holds more than 100 turns and the burst.
	for i := range sent {
		j := i
		for j < len(sent) && sent[j].Sub(sent[i]) < time.Second {
			j++
		}
		if j-i > 100 {
			t.Fatalf("%d sent within a second from %v; want at most 100", j-i, sent[i].Sub(start))
		}
	}
}

// Turns not handed out within the horizon lapse, and the next grant is
// half the size: demand fell.
func TestGrantsLapse(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	s, cnt := leaseStore(t, srv, redistest.Prefix(t), clock, 8)
	a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant GET /x", Rate: 1e9, Burst: 1e9}}}
	admit := func() {
		t.Helper()
		if d, err := s.Admit(pathCtx, a); err != nil || d.Reason != store.Admitted {
			t.Fatalf("Admit = %+v, %v; want admitted", d, err)
		}
	}
	for range 4 { // grants of 1, 2 (one handed out) and 4: 3 left
		admit()
	}
	clock.Advance(DefaultHorizon + time.Nanosecond)
	cnt.n.Store(0)
	admit() // the 3 lapsed: a grant of 2
	admit() // its second turn
	admit() // used up within the horizon: a grant of 4
	if got := cnt.n.Load(); got != 2 {
		t.Fatalf("round trips = %d after the lapse; want 2 (grants of 2 and 4)", got)
	}
	for range 3 { // the grant of 4's other turns
		admit()
	}
	admit() // a grant of 8
	if got := cnt.n.Load(); got != 3 {
		t.Errorf("round trips = %d; want 3 (grants of 2, 4 and 8)", got)
	}
}

// Shares of a concurrency cap: the fleet never holds more slots than the
// cap, a Store that uses fewer gives the rest back at its renewal, and
// Close gives back all it does not use.
func TestGrantsShareTheCap(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	a, _ := leaseStore(t, srv, prefix, clock, 16)
	b, _ := leaseStore(t, srv, prefix, clock, 16)
	ctx := context.Background()
	adm := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 4}, {Key: "tenant GET /x"}}}
	admitAll := func(s *Store) (n int) {
		for range 10 {
			d, err := s.Admit(ctx, adm)
			if err != nil {
				t.Fatal(err)
			}
			if d.Reason != store.Admitted {
				if d.Reason != store.Busy || d.Scope != "tenant" {
					t.Fatalf("decision %+v; want busy on tenant", d)
				}
				return n
			}
			if d.Lease != shareLease {
				t.Fatalf("lease %x; want the share lease", d.Lease)
			}
			n++
		}
		return n
	}
	if n := admitAll(a); n != 4 {
		t.Fatalf("a admitted %d at once under a cap of 4; want 4", n)
	}
	if n := admitAll(b); n != 0 {
		t.Fatalf("b admitted %d while a holds the cap; want 0", n)
	}
	for range 3 {
		a.Release(ctx, adm, shareLease)
	}
	// a uses one now; its share shrinks to what it used since the last
	// renewal (4), then, at the next, to the one.
	a.renewOnce(ctx, false)
	if n := admitAll(b); n != 0 {
		t.Fatalf("b admitted %d before a gave back; want 0", n)
	}
	a.renewOnce(ctx, false)
	if n := admitAll(b); n != 3 {
		t.Fatalf("b admitted %d after a gave back three; want 3", n)
	}
	for range 3 {
		b.Release(ctx, adm, shareLease)
	}
	a.Release(ctx, adm, shareLease)
	a.Close()
	if n := admitAll(b); n != 4 {
		t.Fatalf("b admitted %d after a closed; want 4", n)
	}
}

// A block this Store learns drops the turns it holds for the blocked
// scope, and a server's count of what is left is lowered by the turns the
// Store holds unsent: another process then gets what the server counts,
// less those.
func TestGrantsHonourBlocksAndCounts(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	a, _ := leaseStore(t, srv, prefix, clock, 8)
	b, _ := leaseStore(t, srv, prefix, clock, 0) // per request
	ctx := context.Background()
	adm := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant GET /x", Rate: 1e9, Burst: 1e9}}}
	for range 3 { // grants of 1 and 2, then one of 4: 3 held unsent
		if d, err := a.Admit(ctx, adm); err != nil || d.Reason != store.Admitted {
			t.Fatalf("a.Admit = %+v, %v", d, err)
		}
	}
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Admitted {
		t.Fatalf("a.Admit = %+v", d)
	}
	// a holds 3 unsent turns of the grant of 4; the server says 10 are
	// left, for a 1/s scope.
	err := a.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: adm.Scopes[0].Key, Rate: 1, Burst: 10, Free: 10, HasFree: true}}})
	if err != nil {
		t.Fatal(err)
	}
	// The update is queued: a's next call to Redis carries it (here an
	// admission decided per request, a background one; else a's flusher
	// within 2ms).
	if d, err := a.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "elsewhere"}}, Background: true}); err != nil || d.Reason != store.Admitted {
		t.Fatalf("a.Admit elsewhere = %+v, %v", d, err)
	}
	n := 0
	for ; n < 20; n++ {
		if d, _ := b.Admit(ctx, &store.Admission{Scopes: adm.Scopes, MaxWait: time.Millisecond}); d.Reason != store.Admitted {
			break
		}
	}
	if n != 7 {
		t.Errorf("b admitted %d of a count of 10 with 3 held by a; want 7", n)
	}
	// a's held turns are still its own.
	for i := range 3 {
		if d, _ := a.Admit(ctx, adm); d.Reason != store.Admitted {
			t.Fatalf("a's held turn %d: %+v; want admitted", i, d)
		}
	}
	if err := a.Update(ctx, &store.Update{Blocks: []store.Block{{Key: adm.Scopes[0].Key, For: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Blocked || d.Wait != time.Minute {
		t.Errorf("after the block: %+v; want blocked for a minute", d)
	}
}

// holdTurns admits adm four times on a lease Store that holds no turn of
// its scopes yet: grants of 1, 2 and 4, so that it holds 3.
func holdTurns(t *testing.T, s *Store, adm *store.Admission) {
	t.Helper()
	for range 4 {
		if d, err := s.Admit(context.Background(), adm); err != nil || d.Reason != store.Admitted {
			t.Fatalf("Admit = %+v, %v", d, err)
		}
	}
}

// Another process's block reaches the turns a Store holds within the
// horizon, and no later: until then they are handed out, after it the
// Store asks Redis, which has the block.
func TestGrantsSeeOthersBlocksWithinTheHorizon(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	a, _ := leaseStore(t, srv, prefix, clock, 8)
	b, _ := leaseStore(t, srv, prefix, clock, 0)
	ctx := context.Background()
	adm := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant GET /x", Rate: 1e9, Burst: 1e9}}}
	holdTurns(t, a, adm)
	if err := b.Update(ctx, &store.Update{Blocks: []store.Block{{Key: adm.Scopes[0].Key, For: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(DefaultHorizon)
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Admitted {
		t.Fatalf("a held turn at the horizon: %+v; want admitted", d)
	}
	clock.Advance(time.Nanosecond)
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Blocked || d.Wait != time.Minute-DefaultHorizon-time.Nanosecond {
		t.Errorf("past the horizon: %+v; want blocked for the rest of the minute", d)
	}
}

// A bound of a window's turn (store.Block.Bound) a Store learned is not
// decided on its own: another process may have learned a nearer bound of
// the same turn, and Redis keeps the least. A mandated wait is still
// decided locally, with no round trip. Without this, each of a fleet's
// Stores held its requests to its own bound, up to a second past the turn
// another process knew.
func TestGrantsAskRedisWhileOnlyABoundHolds(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	a, cnt := leaseStore(t, srv, prefix, clock, 8)
	b, _ := leaseStore(t, srv, prefix, clock, 8)
	ctx := context.Background()
	adm := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant GET /x", Rate: 1e9, Burst: 1e9}}}
	holdTurns(t, a, adm)
	bound := func(s *Store, d time.Duration) {
		t.Helper()
		if err := s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: adm.Scopes[0].Key, For: d, Bound: true}}}); err != nil {
			t.Fatal(err)
		}
	}
	bound(a, 2800*time.Millisecond) // a's reading: the turn comes by 2.8s
	bound(b, 2010*time.Millisecond) // b read the same turn earlier: by 2.01s
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Blocked || d.Wait != 2010*time.Millisecond {
		t.Errorf("a after both bounds: %+v; want blocked for b's 2.01s", d)
	}
	clock.Advance(2010 * time.Millisecond)
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Admitted {
		t.Errorf("a at the nearer bound: %+v; want admitted (its own bound runs to 2.8s)", d)
	}
	// Admitted by Redis after the bound was learned, a decides its held
	// turns itself again.
	cnt.n.Store(0)
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Admitted || cnt.n.Load() != 0 {
		t.Errorf("a's next admission: %+v with %d round trips; want admitted on a held turn, none", d, cnt.n.Load())
	}
	// A mandated wait holds locally and costs no round trip, nearer
	// bounds notwithstanding.
	if err := a.Update(ctx, &store.Update{Blocks: []store.Block{{Key: adm.Scopes[0].Key, For: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	bound(b, time.Second)
	cnt.n.Store(0)
	if d, _ := a.Admit(ctx, adm); d.Reason != store.Blocked || d.Wait != time.Minute || cnt.n.Load() != 0 {
		t.Errorf("a under a mandated minute: %+v with %d round trips; want blocked a minute, none", d, cnt.n.Load())
	}
}

// The fleet's meter (store.ScopeAdmit.Meter) counts the turns a Store
// handed out when it makes its next grant, and never those that lapsed:
// AIMD sizes its cuts from it.
func TestGrantsMeterWhatWasHandedOut(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	a, _ := leaseStore(t, srv, prefix, clock, 8)
	b, _ := leaseStore(t, srv, prefix, clock, 0)
	ctx := context.Background()
	scopes := []store.ScopeAdmit{{Key: "tenant GET /x", Rate: 1e9, Burst: 1e9, Meter: true}}
	adm := &store.Admission{Scopes: scopes}
	metered := func() float64 {
		t.Helper()
		d, err := b.Admit(ctx, &store.Admission{Scopes: scopes})
		if err != nil || d.Reason != store.Admitted {
			t.Fatalf("b.Admit = %+v, %v", d, err)
		}
		return d.Metered
	}
	for range 4 { // grants of 1, 2 (one handed out) and 4 (3 booked behind)
		if d, err := a.Admit(ctx, adm); err != nil || d.Reason != store.Admitted {
			t.Fatalf("a.Admit = %+v, %v", d, err)
		}
	}
	// Counted: the three callers and the one handed out of the grant of 2.
	if m := metered(); m != 4 {
		t.Fatalf("metered %v after a's 4; want 4", m)
	}
	for range 2 { // two of the grant of 4's three, not counted yet
		a.Admit(ctx, adm)
	}
	if m := metered(); m != 5 { // and b's own
		t.Fatalf("metered %v; want 5 (a's two not counted yet)", m)
	}
	clock.Advance(DefaultHorizon + time.Nanosecond) // the third lapses
	a.Admit(ctx, adm)                               // a grant of 2, counting the two
	if m := metered(); m != 9 {
		t.Errorf("metered %v; want 9 (4, b's 2, a's two handed out and its caller, not the lapsed one)", m)
	}
}

// A new rate this Store learns (AIMD's cut or raise) drops the turns it
// holds, booked at the old one: the next admission asks Redis.
func TestGrantsDropTurnsOnANewRate(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	s, cnt := leaseStore(t, srv, redistest.Prefix(t), clock, 8)
	ctx := context.Background()
	adm := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant GET /x", Rate: 1e9, Burst: 1e9}}}
	for range 4 { // grants of 1, 2 and 4: 3 held
		if d, err := s.Admit(pathCtx, adm); err != nil || d.Reason != store.Admitted {
			t.Fatalf("Admit = %+v, %v", d, err)
		}
	}
	if err := s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: adm.Scopes[0].Key, Rate: 5e8, Burst: 1e9}}}); err != nil {
		t.Fatal(err)
	}
	cnt.n.Store(0)
	if d, err := s.Admit(pathCtx, adm); err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit = %+v, %v", d, err)
	}
	if got := cnt.n.Load(); got != 1 {
		t.Errorf("round trips after a new rate = %d; want 1 (the held turns dropped)", got)
	}
}

// Redis dies in lease mode: the turns held lapse, admissions go to the
// local fallback (its divided cap, its own leases), a release of a share
// taken before still works, the shares are forgotten (Redis's copy
// expires), and after Redis returns lease mode takes its shares anew,
// within the cap.
func TestGrantsWhenRedisDies(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	s := New(failingClient(t, srv), Config{Prefix: redistest.Prefix(t), Timeout: 2 * time.Second, Instances: 3,
		ProbeInterval: 20 * time.Millisecond, Now: clock.Now, Batch: 8})
	s.renewEvery = time.Hour
	defer s.Close()
	ctx := context.Background()
	adm := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 6}, {Key: "tenant GET /x", Rate: 1e9, Burst: 1e9}}}
	// admit admits a copy of adm, waiting (on the clock) for a turn it
	// reserved: the fallback's buckets, and Redis's after the return,
	// start empty.
	admit := func() (store.Decision, error) {
		a := *adm
		d, err := s.Admit(ctx, &a)
		if err == nil && d.Reason == store.Paced && d.Reserved {
			clock.Advance(d.Wait)
			a.Paced = true
			d, err = s.Admit(ctx, &a)
		}
		return d, err
	}
	d, err := admit()
	if err != nil || d.Lease != shareLease {
		t.Fatalf("Admit on Redis = %+v, %v; want admitted on a share", d, err)
	}
	held := d.Lease

	srv.Kill()
	clock.Advance(DefaultHorizon + time.Nanosecond) // what was held lapses
	var local []store.Lease
	for i := range 5 {
		d, err := admit()
		if err != nil {
			t.Fatalf("admission %d with Redis dead: %v", i, err)
		}
		if d.Reason == store.Admitted {
			if d.Lease == shareLease || d.Lease&redisLease != 0 {
				t.Fatalf("admission %d with Redis dead: lease %x, want a local one", i, d.Lease)
			}
			local = append(local, d.Lease)
		}
	}
	if s.Healthy() {
		t.Fatal("Healthy() = true with redis-server killed")
	}
	if len(local) != 2 { // ceil(6/3)
		t.Errorf("admitted %d in the fallback; want its divided cap of 2", len(local))
	}
	if err := s.Release(ctx, adm, held); err != nil {
		t.Errorf("Release of a share's lease with Redis dead = %v, want nil", err)
	}
	for _, l := range local {
		if err := s.Release(ctx, adm, l); err != nil {
			t.Errorf("Release of a local lease: %v", err)
		}
	}
	s.renewOnce(ctx, false)
	s.grants.mu.Lock()
	for k, sh := range s.grants.shares {
		if sh.held != 0 {
			t.Errorf("share of %s: %d held with Redis down, want 0", k, sh.held)
		}
	}
	s.grants.mu.Unlock()

	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Healthy() {
		if time.Now().After(deadline) {
			t.Fatal("the store did not return to Redis within 10s of its restart")
		}
		time.Sleep(10 * time.Millisecond) // real time: the probe interval
		if _, err := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "probe"}}}); err != nil {
			t.Fatalf("Admit while recovering: %v", err)
		}
	}
	// Redis came back empty: for a moment, admissions wait (busy) for
	// blocks to be re-asserted.
	d, err = admit()
	for i := 0; err == nil && d.Reason == store.Busy && i < 100; i++ {
		clock.Advance(store.BusyPoll)
		d, err = admit()
	}
	if err != nil || d.Lease != shareLease {
		t.Fatalf("back on Redis: %+v, %v; want admitted on a share", d, err)
	}
	n := 1
	for ; n < 10; n++ {
		d, err := admit()
		if err != nil {
			t.Fatal(err)
		}
		if d.Reason != store.Admitted {
			break
		}
		if d.Lease != shareLease {
			t.Fatalf("back on Redis: lease %x, want a share's", d.Lease)
		}
	}
	if n != 6 {
		t.Errorf("back on Redis: %d admitted at once under a cap of 6; want 6", n)
	}
}
