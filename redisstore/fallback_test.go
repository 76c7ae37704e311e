package redisstore

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

// healthLog records a Store's health events.
type healthLog struct {
	mu     sync.Mutex
	events []HealthEvent
}

func (l *healthLog) record(e HealthEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *healthLog) get() []HealthEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]HealthEvent(nil), l.events...)
}

// failingClient returns a client of srv that gives up quickly.
func failingClient(t *testing.T, srv *redistest.Server) *redis.Client {
	opts := srv.Options()
	opts.DialTimeout = 200 * time.Millisecond
	opts.MaxRetries = -1
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// countImmediate admits a until it is not admitted at once, and returns how
// many went; the clock does not move.
func countImmediate(t *testing.T, s *Store, a *store.Admission) int {
	t.Helper()
	for n := 0; n < 1000; n++ {
		d, err := s.Admit(context.Background(), a)
		if err != nil {
			t.Fatalf("Admit error: %v", err)
		}
		if d.Reason != store.Admitted {
			return n
		}
	}
	t.Fatalf("1000 admissions went at once; want pacing")
	return 0
}

// Redis dies mid-run: the store falls back to local state with the budget
// divided by Instances (no burst above it), reports it once, and returns to
// Redis when the server is back. Leases taken in the fallback are released
// there.
func TestFallbackWhenRedisDiesAndRecovery(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	var health healthLog
	s := New(failingClient(t, srv), Config{
		Prefix:        redistest.Prefix(t),
		Timeout:       2 * time.Second, // a dead server refuses at once; a paused one is TestFallbackWhenRedisHangs
		Instances:     4,
		ProbeInterval: 20 * time.Millisecond,
		Now:           clock.Now,
		Logger:        slog.New(slog.NewTextHandler(t.Output(), nil)),
		OnHealth:      health.record,
	})
	defer s.Close()
	ctx := context.Background()
	// MaxWait 1ns: a request that cannot go at once books nothing, so the
	// counts below are what the budget lets through.
	paced := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 40, Burst: 8}}, MaxWait: 1}
	tenant := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 6}}}

	// On Redis: the whole budget.
	if n := countImmediate(t, s, paced); n != 8 {
		t.Errorf("on Redis: %d admissions at once, want the burst of 8", n)
	}
	d, err := s.Admit(ctx, tenant)
	if err != nil || d.Reason != store.Admitted || d.Lease&redisLease == 0 {
		t.Fatalf("Admit(tenant) on Redis = %+v, %v; want admitted with a Redis lease", d, err)
	}
	redisHeld := d.Lease

	// A loop of admissions, with Redis killed in the middle.
	admitted := 0
	for i := range 400 {
		if i == 100 {
			srv.Kill()
		}
		clock.Advance(5 * time.Millisecond)
		d, err := s.Admit(ctx, paced)
		if err != nil {
			t.Fatalf("admission %d: error %v", i, err)
		}
		if i >= 100 && d.Reason == store.Admitted {
			admitted++
		}
	}
	if s.Healthy() {
		t.Fatalf("Healthy() = true after redis-server was killed")
	}
	// 300 admissions 5ms apart: 1.5s at 40/4 = 10 per second, plus the
	// divided burst of 2.
	if admitted > 2+15 || admitted < 14 {
		t.Errorf("in the fallback, %d admissions over 1.5s; want at most 17 (10/s and a burst of 2) and about 15", admitted)
	}
	if ev := health.get(); len(ev) != 1 || ev[0].Healthy || ev[0].Err == nil {
		t.Errorf("health events = %+v, want one unhealthy event with its error", ev)
	}
	clock.Advance(time.Minute)
	if n := countImmediate(t, s, paced); n != 2 {
		t.Errorf("in the fallback after a quiet minute: %d admissions at once, want the divided burst of 2", n)
	}
	var local []store.Lease
	for range 2 {
		d, err := s.Admit(ctx, tenant)
		if err != nil || d.Reason != store.Admitted || d.Lease&redisLease != 0 {
			t.Fatalf("Admit(tenant) in the fallback = %+v, %v; want admitted with a local lease", d, err)
		}
		local = append(local, d.Lease)
	}
	if d, _ := s.Admit(ctx, tenant); d.Reason != store.Busy {
		t.Errorf("third Admit(tenant) in the fallback = %+v; want busy at ceil(6/4) = 2", d)
	}
	if err := s.Release(ctx, tenant, redisHeld); err != nil {
		t.Errorf("Release of a Redis lease while Redis is down = %v, want nil (it expires there)", err)
	}
	if err := s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "blocked", For: time.Second}}}); err != nil {
		t.Errorf("Update in the fallback = %v, want nil", err)
	}
	if d, _ := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "blocked"}}}); d.Reason != store.Blocked {
		t.Errorf("Admit after a block in the fallback = %+v, want blocked", d)
	}

	// Redis comes back (empty: persistence is off).
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Healthy() {
		if time.Now().After(deadline) {
			t.Fatalf("the store did not return to Redis within 10s of its restart")
		}
		time.Sleep(10 * time.Millisecond) // real time: the probe interval
		if _, err := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "probe"}}}); err != nil {
			t.Fatalf("Admit error while recovering: %v", err)
		}
	}
	if ev := health.get(); len(ev) != 2 || !ev[1].Healthy {
		t.Errorf("health events = %+v, want a healthy event last", ev)
	}
	for _, l := range local {
		if err := s.Release(ctx, tenant, l); err != nil {
			t.Errorf("Release of a local lease after recovery: %v", err)
		}
	}
	if snap, _ := s.mem.Snapshot("tenant"); snap.Leases != 0 {
		t.Errorf("the fallback holds %d leases after their release, want 0", snap.Leases)
	}
	clock.Advance(time.Minute)
	if n := countImmediate(t, s, paced); n != 8 {
		t.Errorf("back on Redis: %d admissions at once, want the whole burst of 8", n)
	}
}

// A server that hangs, rather than refusing, costs each call at most the
// timeout; FailThreshold such calls in a row make the store fall back, and
// the hand-over adds no burst to what Redis already let through. It returns
// when the server resumes.
func TestFallbackWhenRedisHangs(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	var health healthLog
	s := New(failingClient(t, srv), Config{
		Prefix:        redistest.Prefix(t),
		Timeout:       100 * time.Millisecond,
		Instances:     2,
		ProbeInterval: 20 * time.Millisecond,
		Now:           clock.Now,
		OnHealth:      health.record,
	})
	defer s.Close()
	paced := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 10, Burst: 6}}, MaxWait: 1}
	if n := countImmediate(t, s, paced); n != 6 {
		t.Errorf("on Redis: %d admissions at once, want 6", n)
	}
	srv.Pause()
	start := time.Now()
	// The burst went on Redis: the local bucket starts empty, a turn
	// (200ms at the divided rate of 5/s) away.
	if d, err := s.Admit(context.Background(), paced); err != nil || d.Reason != store.Paced || d.Wait != 200*time.Millisecond {
		t.Errorf("first Admit with Redis hanging = %+v, %v; want paced for a local turn of 200ms", d, err)
	}
	// An upper bound only, far above the 100ms timeout: without the
	// timeout the call would hang for the client's 5s read timeout.
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("first Admit with Redis hanging took %v, want about the 100ms timeout", el)
	}
	if !s.Healthy() || len(health.get()) != 0 {
		t.Errorf("after one failed call: Healthy() = %v with events %+v; want no switch yet", s.Healthy(), health.get())
	}
	for i := range DefaultFailThreshold - 1 {
		if d, _ := s.Admit(context.Background(), paced); d.Reason == store.Admitted {
			t.Errorf("admission %d with Redis hanging was admitted; want the hand-over to add no burst", i+2)
		}
	}
	if s.Healthy() || len(health.get()) != 1 {
		t.Errorf("after %d failed calls: Healthy() = %v with events %+v; want a fallback reported once", DefaultFailThreshold, s.Healthy(), health.get())
	}
	clock.Advance(200 * time.Millisecond) // one turn at the divided rate of 5/s
	if n := countImmediate(t, s, paced); n != 1 {
		t.Errorf("in the fallback one turn later: %d admissions at once, want 1", n)
	}
	srv.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Healthy() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		_, _ = s.Admit(context.Background(), &store.Admission{Scopes: []store.ScopeAdmit{{Key: "probe"}}})
	}
	if !s.Healthy() {
		t.Fatalf("the store did not return to Redis within 10s of its resumption")
	}
	if ev := health.get(); len(ev) != 2 || !ev[1].Healthy {
		t.Errorf("health events = %+v, want a fallback and a return", ev)
	}
	if st := s.Stats(); st.Fallbacks != 1 || st.Recoveries != 1 || !st.Healthy {
		t.Errorf("Stats() = %+v, want one fallback and one recovery, healthy", st)
	}
}

// Admissions from many goroutines while Redis dies and comes back: no
// panic, no error, no race.
func TestConcurrentAdmissionsAcrossFailure(t *testing.T) {
	srv := redistest.Start(t)
	s := New(failingClient(t, srv), Config{
		Prefix:        redistest.Prefix(t),
		Timeout:       200 * time.Millisecond,
		Instances:     3,
		ProbeInterval: 10 * time.Millisecond,
	})
	defer s.Close()
	a := &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "tenant", Limit: 4},
		{Key: "e", Rate: 1e6, Burst: 1e6},
		{Key: "w", Gap: time.Microsecond},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				d, err := s.Admit(ctx, a)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("Admit error: %v", err)
					}
					return
				}
				if d.Reason == store.Admitted {
					if err := s.Release(context.Background(), a, d.Lease); err != nil && s.Healthy() {
						t.Logf("Release: %v", err) // Redis died under it: allowed
					}
				}
				_ = s.Update(context.Background(), &store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 1e6, Burst: 1e6}}})
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	srv.Kill()
	time.Sleep(100 * time.Millisecond)
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Healthy() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	// A call on a pooled connection from before the kill may fail once
	// more after the first probe succeeded, and send the store back to
	// the fallback for a probe interval: it must come back in the end.
	for !s.Healthy() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		_, _ = s.Admit(context.Background(), &store.Admission{Scopes: []store.ScopeAdmit{{Key: "probe"}}})
	}
	if !s.Healthy() {
		t.Errorf("the store did not return to Redis")
	}
}

// Just after a return from the fallback, Redis takes every scope's burst
// as spent: the fleet spent it locally meanwhile, so the return adds no
// burst, not even one request; from then on the bucket refills at the
// scope's rate.
func TestReturnAddsNoBurst(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	s := New(srv.NewClient(t), Config{Prefix: redistest.Prefix(t), Now: clock.Now, Timeout: 5 * time.Second})
	defer s.Close()
	paced := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 10, Burst: 8}}, MaxWait: 1}
	s.handover.Store(clock.Now().UnixNano()) // as end does on a return
	if d, err := s.Admit(context.Background(), paced); err != nil || d.Reason != store.Paced || d.Wait != 100*time.Millisecond {
		t.Errorf("just after a return: Admit = %+v, %v; want paced for a turn of 100ms (no burst)", d, err)
	}
	clock.Advance(300 * time.Millisecond)
	if n := countImmediate(t, s, paced); n != 3 {
		t.Errorf("0.3s after the return: %d admissions at once, want the 3 that 10/s refilled", n)
	}
	clock.Advance(time.Second)
	if n := countImmediate(t, s, paced); n != 8 {
		t.Errorf("1.3s after the return: %d admissions at once, want the refilled burst of 8", n)
	}
	// A spaced resource is taken as written at the return.
	w := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "issue 1", Gap: 2 * time.Second}}}
	if d, err := s.Admit(context.Background(), w); err != nil || d.Reason != store.Spaced || d.Wait != 700*time.Millisecond {
		t.Errorf("a write 1.3s after the return = %+v, %v; want spaced for the 0.7s left of a 2s gap from the return", d, err)
	}
}
