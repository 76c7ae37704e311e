package redisstore

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

// onPath marks the context of a request's own calls.
type onPath struct{}

// pathCtx is the context of a request's calls, which trips counts.
var pathCtx = context.WithValue(context.Background(), onPath{}, true)

// trips counts the round trips a client makes with pathCtx: those on a
// request's path, not the flusher's.
type trips struct{ n atomic.Int64 }

func (c *trips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(onPath{}) != nil {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(onPath{}) != nil {
			c.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// countedClient returns a client of srv and the count of its round trips
// on a request's path.
func countedClient(t *testing.T, srv *redistest.Server) (*redis.Client, *trips) {
	c := srv.NewClient(t)
	cnt := new(trips)
	c.AddHook(cnt)
	return c, cnt
}

// pairOnRedis returns two Stores on one redis-server, prefix and manual
// clock, as two processes: a, whose round trips on a request's path cnt
// counts and whose queue only a call carries (its flusher waits an hour),
// and b. Both are closed when the test ends.
func pairOnRedis(t *testing.T) (a, b *Store, cnt *trips, clock *storetest.Clock) {
	srv := redistest.Start(t)
	c, cnt := countedClient(t, srv)
	clock = storetest.NewClock()
	cfg := Config{Prefix: redistest.Prefix(t), Now: clock.Now, Timeout: 5 * time.Second}
	a = New(c, cfg)
	a.flushAfter = time.Hour
	b = New(srv.NewClient(t), cfg)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b, cnt, clock
}

// A request through a Store is one round trip: its admission, which also
// carries the release of the request before it; its own release costs
// none. Each admission finds the slot of the one before free.
func TestOneRoundTripPerRequest(t *testing.T) {
	srv := redistest.Start(t)
	c, cnt := countedClient(t, srv)
	prefix := redistest.Prefix(t)
	s := New(c, Config{Prefix: prefix, Timeout: 5 * time.Second})
	// Only an admission carries a release: the flusher, which sends one
	// when no call comes within flushDelay, would count a round trip of
	// its own whenever the machine stalls this loop for 2 ms.
	s.flushAfter = time.Hour
	a := &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "global"},
		{Key: "tenant", Limit: 1},
		{Key: "endpoint", Rate: 1e9, Burst: 1e9},
	}}
	ctx := context.Background()
	for range 2 { // load the scripts
		d, err := s.Admit(ctx, a)
		if err != nil || d.Reason != store.Admitted {
			t.Fatalf("Admit = %+v, %v; want admitted", d, err)
		}
		_ = s.Release(ctx, a, d.Lease)
	}
	cnt.n.Store(0)
	const n = 100
	for i := range n {
		d, err := s.Admit(pathCtx, a)
		if err != nil || d.Reason != store.Admitted {
			t.Fatalf("Admit %d = %+v, %v; want admitted (the slot of the one before freed)", i, d, err)
		}
		if err := s.Release(pathCtx, a, d.Lease); err != nil {
			t.Fatal(err)
		}
	}
	if got := cnt.n.Load(); got != n {
		t.Errorf("%d requests (admission and release) made %d round trips, want %d", n, got, n)
	}
	s.Close()
	if held, err := c.ZCard(ctx, "{"+prefix+"}:l:tenant").Result(); err != nil || held != 0 {
		t.Errorf("leases held after Close = %d, %v; want none", held, err)
	}
}

// A queued release goes in the script of the Store's next admission, which
// finds its slot free, and its gap started at the release, not at the
// admission that carried it. Until then other processes see the slot
// taken.
func TestNextAdmissionCarriesRelease(t *testing.T) {
	a, b, cnt, clock := pairOnRedis(t)
	tenant := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}}}
	w := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}, {Key: "issue 1", Gap: time.Second}}}
	ctx := context.Background()

	d, err := a.Admit(ctx, w)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit = %+v, %v; want admitted", d, err)
	}
	cnt.n.Store(0)
	if err := a.Release(pathCtx, w, d.Lease); err != nil {
		t.Fatal(err)
	}
	if n := cnt.n.Load(); n != 0 || a.Stats().Queued != 1 {
		t.Errorf("Release made %d round trips and queued %d, want none and one queued", n, a.Stats().Queued)
	}
	if d, err := b.Admit(ctx, tenant); err != nil || d.Reason != store.Busy {
		t.Errorf("another Store's Admit before the release went = %+v, %v; want busy", d, err)
	}
	clock.Advance(400 * time.Millisecond)
	if d, err := a.Admit(pathCtx, w); err != nil || d.Reason != store.Spaced || d.Wait != 600*time.Millisecond {
		t.Errorf("Admit 400ms after the release = %+v, %v; want spaced for the 600ms left of the gap", d, err)
	}
	if n := cnt.n.Load(); n != 1 || a.Stats().Queued != 0 {
		t.Errorf("the admission made %d round trips, leaving %d queued; want one, none", n, a.Stats().Queued)
	}
	if d, err := b.Admit(ctx, tenant); err != nil || d.Reason != store.Admitted {
		t.Errorf("another Store's Admit after the admission that carried the release = %+v, %v; want admitted", d, err)
	}
}

// With no call to carry it, the flusher sends a release on its own: the
// last request of a Store does not keep its slot.
func TestFlusherSendsLastRelease(t *testing.T) {
	srv := redistest.Start(t)
	c, cnt := countedClient(t, srv)
	cfg := Config{Prefix: redistest.Prefix(t), Timeout: 5 * time.Second}
	a := New(c, cfg)
	b := New(srv.NewClient(t), cfg)
	defer a.Close()
	defer b.Close()
	tenant := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}}}
	ctx := context.Background()
	d, err := a.Admit(ctx, tenant)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit = %+v, %v; want admitted", d, err)
	}
	cnt.n.Store(0)
	began := time.Now()
	if err := a.Release(pathCtx, tenant, d.Lease); err != nil {
		t.Fatal(err)
	}
	if n := cnt.n.Load(); n != 0 {
		t.Errorf("Release made %d round trips, want none", n)
	}
	// Real time: the flusher's delay, and the redis-server's.
	for {
		d, err := b.Admit(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		if d.Reason == store.Admitted {
			break
		}
		if time.Since(began) > 5*time.Second {
			t.Fatalf("the slot is still taken %v after the release", time.Since(began))
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("slot free on Redis %v after the release", time.Since(began))
	// The flusher counts the release sent once its call returns, which
	// may be just after Redis has run it.
	for st := a.Stats(); st.Queued != 0 || st.Pending != 0; st = a.Stats() {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("Stats() = %+v %v after the release, want nothing queued or pending", st, time.Since(began))
		}
		time.Sleep(time.Millisecond)
	}
}

// Close sends the queued releases; after it each release is its own call.
func TestCloseSendsQueuedReleases(t *testing.T) {
	srv := redistest.Start(t)
	c, cnt := countedClient(t, srv)
	cfg := Config{Prefix: redistest.Prefix(t), Timeout: 5 * time.Second}
	a := New(c, cfg)
	a.flushAfter = time.Hour
	b := New(srv.NewClient(t), cfg)
	defer b.Close()
	tenant := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}}}
	ctx := context.Background()
	d, err := a.Admit(ctx, tenant)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit = %+v, %v; want admitted", d, err)
	}
	_ = a.Release(ctx, tenant, d.Lease)
	a.Close()
	d, err = b.Admit(ctx, tenant)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit after the other Store's Close = %+v, %v; want admitted (the release sent)", d, err)
	}
	if err := b.Release(ctx, tenant, d.Lease); err != nil {
		t.Fatal(err)
	}
	b.Close()

	d, err = a.Admit(ctx, tenant)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit after Close = %+v, %v; want admitted", d, err)
	}
	cnt.n.Store(0)
	_ = a.Release(pathCtx, tenant, d.Lease)
	if n, q := cnt.n.Load(), a.Stats().Queued; n != 1 || q != 0 {
		t.Errorf("Release after Close made %d round trips and queued %d, want its own call", n, q)
	}
}

// The flusher waits flushDelay for a call to carry a release, and no
// longer; past maxQueued a release is its own call; Close sends the rest
// and stops the flusher.
func TestFlusherDelayAndBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRedis{}
		s := New(f, Config{})
		f.s = s
		ctx := context.Background()
		a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 1e9}, {Key: "tenant", Limit: 1 << 20}}}
		admit := func() store.Lease {
			t.Helper()
			d, err := s.Admit(ctx, a)
			if err != nil || d.Reason != store.Admitted {
				t.Fatalf("Admit = %+v, %v", d, err)
			}
			return d.Lease
		}

		// The next admission carries the release: the lease set of its
		// scope (without a gap, no state hash) follows the admission's
		// keys.
		_ = s.Release(ctx, a, admit())
		admit()
		if n, keys := f.count("release"), len(f.lastKeys("admit")); n != 0 || keys != 2+2*2+1 {
			t.Errorf("admission after a release: %d release calls, %d keys; want none, and %d keys", n, keys, 2+2*2+1)
		}

		// With no call to carry it, the flusher sends it flushDelay later.
		_ = s.Release(ctx, a, admit())
		time.Sleep(flushDelay - time.Nanosecond)
		synctest.Wait()
		if n, q := f.count("release"), s.Stats().Queued; n != 0 || q != 1 {
			t.Errorf("just before flushDelay: %d release calls, %d queued; want none and one", n, q)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n, q := f.count("release"), s.Stats().Queued; n != 1 || q != 0 {
			t.Errorf("at flushDelay: %d release calls, %d queued; want one and none", n, q)
		}

		// Past maxQueued, a release is its own call, which carries the
		// queue before it.
		leases := make([]store.Lease, 2*maxQueued+1)
		for i := range leases {
			leases[i] = admit()
		}
		for _, l := range leases[:maxQueued+1] {
			_ = s.Release(ctx, a, l)
		}
		if n, q, keys := f.count("release"), s.Stats().Queued, len(f.lastKeys("release")); n != 2 || q != 0 || keys != maxQueued+1 {
			t.Errorf("%d releases: %d release calls, %d queued, the last with %d keys; want 2, none, and %d", maxQueued+1, n, q, keys, maxQueued+1)
		}
		// Close sends the rest, foldBatch a call, at once.
		for _, l := range leases[maxQueued+1:] {
			_ = s.Release(ctx, a, l)
		}
		s.Close()
		if n, q := f.count("release"), s.Stats().Queued; n != 2+maxQueued/foldBatch || q != 0 {
			t.Errorf("after Close: %d release calls, %d queued; want %d and none", n, q, 2+maxQueued/foldBatch)
		}
	})
}

// A queued release whose call fails is kept, as a release that cannot
// reach Redis always is, and delivered when Redis answers.
func TestQueuedReleaseKeptWhenCallFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRedis{}
		s := New(f, Config{})
		f.s = s
		defer s.Close()
		ctx := context.Background()
		a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 4}}}
		for _, carrier := range []string{"admission", "flusher"} {
			d, err := s.Admit(ctx, a)
			if err != nil || d.Lease&redisLease == 0 {
				t.Fatalf("Admit = %+v, %v; want a Redis lease", d, err)
			}
			_ = s.Release(ctx, a, d.Lease)
			f.setDown(true)
			want := 1 // the release
			if carrier == "admission" {
				_, _ = s.Admit(ctx, a)
				want++ // and the undo of the admission
			} else {
				time.Sleep(flushDelay)
				synctest.Wait()
			}
			if st := s.Stats(); st.Pending != want || st.Queued != 0 {
				t.Errorf("%s failed: Stats() = %+v, want %d pending, none queued", carrier, st, want)
			}
			f.setDown(false)
			before := f.count("release")
			_, _ = s.Admit(ctx, a) // delivers what was kept
			if st := s.Stats(); st.Pending != 0 || f.count("release") != before+1 {
				t.Errorf("after the %s's failure: %d pending, %d releases delivered; want none and 1", carrier, st.Pending, f.count("release")-before)
			}
		}
	})
}
