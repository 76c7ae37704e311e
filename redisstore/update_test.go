package redisstore

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

// count is the update of a response that reports what is left of a 1/s
// limit: nothing, so the scope's next request waits a second.
func count(key string) *store.Update {
	return &store.Update{Rates: []store.RateUpdate{{Key: key, Rate: 1, Burst: 1, Free: 0, HasFree: true, TTL: time.Hour}}}
}

// queuedOnFake returns a Store on a fakeRedis, in a synctest bubble, with
// count("endpoint") queued; it is closed when the test ends.
func queuedOnFake(t *testing.T) (*Store, *fakeRedis) {
	f := &fakeRedis{}
	s := New(f, Config{})
	f.s = s
	t.Cleanup(func() { s.Close() })
	if err := s.Update(context.Background(), count("endpoint")); err != nil {
		t.Fatal(err)
	}
	return s, f
}

// An update without a block costs no round trip of its own: it is queued,
// and the Store's next admission carries it, applied before its decision,
// in its one round trip, on the clock of when it was made. Until then
// other processes do not see it.
func TestQueuedUpdateGoesWithNextAdmission(t *testing.T) {
	a, b, cnt, clock := pairOnRedis(t)
	endpoint := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "endpoint", Rate: 1e9, Burst: 1e9}}}
	other := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "other", Rate: 1e9, Burst: 1e9}}}
	ctx := context.Background()
	if _, err := a.Admit(ctx, other); err != nil { // load the scripts
		t.Fatal(err)
	}

	cnt.n.Store(0)
	if err := a.Update(pathCtx, count("endpoint")); err != nil {
		t.Fatal(err)
	}
	if n, q := cnt.n.Load(), a.Stats().Queued; n != 0 || q != 1 {
		t.Errorf("Update made %d round trips and queued %d, want none and one queued", n, q)
	}
	if d, err := b.Admit(ctx, endpoint); err != nil || d.Reason != store.Admitted {
		t.Errorf("another Store's Admit before the update went = %+v, %v; want admitted at the default rate", d, err)
	}
	clock.Advance(400 * time.Millisecond)
	d, err := a.Admit(pathCtx, endpoint)
	if err != nil || d.Reason != store.Paced || d.Wait != 600*time.Millisecond {
		t.Errorf("Admit 400ms after the update = %+v, %v; want paced for the 600ms left of the second the count it carried owes", d, err)
	}
	if n, q := cnt.n.Load(), a.Stats().Queued; n != 1 || q != 0 {
		t.Errorf("the update and the admission made %d round trips, leaving %d queued; want one, none", n, q)
	}
	if d, err := b.Admit(ctx, endpoint); err != nil || d.Reason != store.Paced {
		t.Errorf("another Store's Admit after the admission that carried the update = %+v, %v; want paced", d, err)
	}
}

// An update with a block is its own call, and returns once Redis has it:
// another process is blocked at once. It carries the queued updates
// before it, in the same round trip.
func TestUpdateWithBlockCarriesQueue(t *testing.T) {
	a, b, cnt, _ := pairOnRedis(t)
	ctx := context.Background()
	// Load the script.
	if err := a.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "other", For: time.Millisecond}}}); err != nil {
		t.Fatal(err)
	}

	cnt.n.Store(0)
	if err := a.Update(pathCtx, count("endpoint")); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(pathCtx, &store.Update{Blocks: []store.Block{{Key: "tenant", For: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	if n, q := cnt.n.Load(), a.Stats().Queued; n != 1 || q != 0 {
		t.Errorf("a queued update and one with a block made %d round trips, leaving %d queued; want one, none", n, q)
	}
	if d, err := b.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant"}}}); err != nil || d.Reason != store.Blocked {
		t.Errorf("another Store's Admit after the block = %+v, %v; want blocked", d, err)
	}
	if d, err := b.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "endpoint", Rate: 1e9, Burst: 1e9}}}); err != nil || d.Reason != store.Paced {
		t.Errorf("another Store's Admit after the block = %+v, %v; want paced by the update queued before it", d, err)
	}
}

// Close sends the queued updates.
func TestCloseSendsQueuedUpdates(t *testing.T) {
	a, b, _, _ := pairOnRedis(t)
	ctx := context.Background()
	for i := range 3 {
		if err := a.Update(ctx, count(fmt.Sprint("endpoint ", i))); err != nil {
			t.Fatal(err)
		}
	}
	if q := a.Stats().Queued; q != 3 {
		t.Fatalf("Stats().Queued = %d after 3 updates, want 3", q)
	}
	a.Close()
	for i := range 3 {
		adm := &store.Admission{Scopes: []store.ScopeAdmit{{Key: fmt.Sprint("endpoint ", i), Rate: 1e9, Burst: 1e9}}}
		if d, err := b.Admit(ctx, adm); err != nil || d.Reason != store.Paced || d.Wait != time.Second {
			t.Errorf("another Store's Admit of endpoint %d after Close = %+v, %v; want paced for 1s", i, d, err)
		}
	}
}

// With no call to carry it, the flusher sends an update flushDelay after
// it was made. Past maxQueued, an update is its own call, which carries
// the queue before it.
func TestFlusherSendsQueuedUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := queuedOnFake(t)
		ctx := context.Background()
		time.Sleep(flushDelay - time.Nanosecond)
		synctest.Wait()
		if n, u, q := f.count("release"), f.count("update"), s.Stats().Queued; n != 0 || u != 0 || q != 1 {
			t.Errorf("just before flushDelay: %d release and %d update calls, %d queued; want none and one queued", n, u, q)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n, u, q := f.count("release"), f.count("update"), s.Stats().Queued; n != 1 || u != 0 || q != 0 {
			t.Errorf("at flushDelay: %d release and %d update calls, %d queued; want the flusher's one, none queued", n, u, q)
		}
		if keys := f.lastKeys("release"); len(keys) != 3 || keys[2] != "{heed}:s:endpoint" {
			t.Errorf("the flusher's keys = %q, want the epoch, the index and the endpoint's", keys)
		}

		for i := range maxQueued + 1 {
			if err := s.Update(ctx, count(fmt.Sprint("endpoint ", i))); err != nil {
				t.Fatal(err)
			}
		}
		if n, u, q := f.count("release"), f.count("update"), s.Stats().Queued; n != 1 || u != 1 || q != 0 {
			t.Errorf("%d updates: %d release and %d update calls, %d queued; want 1, 1 and none", maxQueued+1, n, u, q)
		}
		if keys := len(f.lastKeys("update")); keys != 1+3*(maxQueued+1) {
			t.Errorf("the update call past maxQueued has %d keys, want %d: the queue's and its own", keys, 1+3*(maxQueued+1))
		}
	})
}

// A queued update whose call fails is not sent again (a count applied
// twice would give back what was spent since): the local fallback has
// it, and its rate is kept as learned there.
func TestQueuedUpdateNotResentWhenCallFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := queuedOnFake(t)
		ctx := context.Background()
		f.setDown(true)
		_, _ = s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "endpoint", Rate: 1e9, Burst: 1e9}}})
		if st := s.Stats(); st.Pending != 0 || st.Queued != 0 {
			t.Errorf("after the failed admission: Stats() = %+v, want nothing pending or queued", st)
		}
		if snap, ok := s.mem.Snapshot("endpoint"); !ok || snap.Rate != 1 {
			t.Errorf("local state of the endpoint = %+v, %v; want the update's rate, 1", snap, ok)
		}
		s.mu.Lock()
		kr, ok := s.rates["endpoint"]
		s.mu.Unlock()
		if !ok || kr.rate != 1 || !kr.dirty {
			t.Errorf("rate kept = %+v, %v; want 1, to re-assert", kr, ok)
		}
		f.setDown(false)
		before := f.count("update") + f.count("release")
		_, _ = s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "endpoint"}}})
		time.Sleep(time.Second)
		synctest.Wait()
		if n := f.count("update") + f.count("release"); n != before {
			t.Errorf("%d update or release calls after Redis answered again, want none", n-before)
		}
	})
}

// In lease mode, a grant carries the queued updates as an admission does:
// the turns it books follow what they taught.
func TestGrantCarriesQueuedUpdate(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	s, cnt := leaseStore(t, srv, redistest.Prefix(t), clock, 8)
	s.flushAfter = time.Hour
	ctx := context.Background()
	endpoint := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "endpoint", Rate: 1e9, Burst: 1e9}}}
	if _, err := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "other", Rate: 1e9, Burst: 1e9}}}); err != nil {
		t.Fatal(err) // load the script
	}
	cnt.n.Store(0)
	if err := s.Update(pathCtx, count("endpoint")); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Admit(pathCtx, endpoint); err != nil || d.Reason != store.Paced || d.Wait != time.Second {
		t.Errorf("the grant after the update = %+v, %v; want paced for 1s by the count it carried", d, err)
	}
	if n, q := cnt.n.Load(), s.Stats().Queued; n != 1 || q != 0 {
		t.Errorf("the update and the grant made %d round trips, leaving %d queued; want one, none", n, q)
	}
	s.mu.Lock()
	kr := s.rates["endpoint"]
	s.mu.Unlock()
	if kr.rate != 1 || kr.dirty {
		t.Errorf("rate kept = %+v; want 1, as Redis set it", kr)
	}
}
