package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
)

// redisLease is the bit of the leases that Redis holds.
const redisLease store.Lease = 1 << 63

// A redis-server paused (SIGSTOP) for 0.3s and for 3s, under three Stores
// (three processes) of four goroutines each: requests go on locally, are
// decided on Redis again within 2s of SIGCONT, leave no concurrency lease
// behind (admissions whose reply was lost are undone, releases that could
// not reach Redis are delivered), and nothing is admitted into a block.
func TestPauseLeavesNoLease(t *testing.T) {
	for _, pause := range []time.Duration{300 * time.Millisecond, 3 * time.Second} {
		t.Run(pause.String(), func(t *testing.T) { testPause(t, pause) })
	}
}

func testPause(t *testing.T, pause time.Duration) {
	srv := redistest.Start(t)
	if srv.PID() == 0 {
		t.Skip("REDIS_URL names a shared server; this test pauses its own")
	}
	prefix := redistest.Prefix(t)
	const procs, workers, limit = 3, 4, 4
	var stores []*redisstore.Store
	for range procs {
		s := redisstore.New(srv.NewClient(t), redisstore.Config{Prefix: prefix, Instances: procs})
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	ctx := context.Background()
	// A block every process knows (a 429 each of them saw).
	for _, s := range stores {
		if err := s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "blocked", For: time.Minute}}}); err != nil {
			t.Fatal(err)
		}
	}
	tenant := store.ScopeAdmit{Key: "tenant", Limit: limit}
	work := &store.Admission{Scopes: []store.ScopeAdmit{tenant, {Key: "endpoint", Rate: 500, Burst: 20}}, LeaseTTL: time.Minute, MaxWait: 1} // books no turns
	intoBlock := &store.Admission{Scopes: []store.ScopeAdmit{tenant, {Key: "blocked", Rate: 500}}, LeaseTTL: time.Minute, MaxWait: 1}

	var (
		stop      atomic.Bool
		resumed   atomic.Int64 // unix ns of SIGCONT
		intoBlk   atomic.Int64
		admitted  atomic.Int64
		backAfter = make([]atomic.Int64, procs) // first Redis admission after SIGCONT, ns after it
		wg        sync.WaitGroup
		reasons   [5]atomic.Int64
	)
	for p, s := range stores {
		for w := range workers {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					a := work
					if (i+w)%4 == 3 {
						a = intoBlock
					}
					d, err := s.Admit(ctx, a)
					if err != nil {
						t.Errorf("Admit: %v", err)
						return
					}
					if d.Reason != store.Admitted {
						reasons[d.Reason].Add(1)
						time.Sleep(min(d.Wait, 20*time.Millisecond))
						continue
					}
					admitted.Add(1)
					if a == intoBlock {
						intoBlk.Add(1)
					}
					if r := resumed.Load(); r != 0 && d.Lease&redisLease != 0 && backAfter[p].Load() == 0 {
						backAfter[p].Store(max(time.Now().UnixNano()-r, 1))
					}
					time.Sleep(2 * time.Millisecond) // the request
					if err := s.Release(ctx, a, d.Lease); err != nil {
						t.Errorf("Release: %v", err)
					}
				}
			})
		}
	}
	time.Sleep(300 * time.Millisecond)
	srv.Pause()
	time.Sleep(pause)
	srv.Resume()
	resumed.Store(time.Now().UnixNano())
	time.Sleep(2500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	for p := range procs {
		if back := time.Duration(backAfter[p].Load()); back == 0 || back > 2*time.Second {
			t.Errorf("process %d: first admission on Redis %v after SIGCONT, want within 2s", p, back)
		} else {
			t.Logf("process %d: back on Redis %v after SIGCONT", p, back.Round(time.Millisecond))
		}
	}
	if n := intoBlk.Load(); n != 0 {
		t.Errorf("%d admissions into a running block, want none", n)
	}
	// What is still pending goes with the next calls.
	admin := srv.NewClient(t)
	leases := func() int64 {
		n, err := admin.ZCount(ctx, "{"+prefix+"}:l:tenant", fmt.Sprint(time.Now().UnixMicro()), "+inf").Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pending := 0
		for _, s := range stores {
			_, _ = s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "nudge"}}})
			pending += s.Stats().Pending
		}
		if pending == 0 && leases() == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := leases(); n != 0 {
		t.Errorf("%d leases left in Redis after every request ended, want 0", n)
	}
	for p, s := range stores {
		st := s.Stats()
		t.Logf("process %d: %+v", p, st)
		if st.Pending != 0 {
			t.Errorf("process %d: %d releases or undos still pending", p, st.Pending)
		}
	}
	// Every slot is free: the tenant's whole limit admits at once.
	var held []store.Lease
	for i := range limit {
		d, err := stores[0].Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{tenant}})
		if err != nil || d.Reason != store.Admitted || d.Lease&redisLease == 0 {
			t.Errorf("slot %d of %d after the pause: %+v, %v; want admitted on Redis", i+1, limit, d, err)
		}
		held = append(held, d.Lease)
	}
	for _, l := range held {
		_ = stores[0].Release(ctx, &store.Admission{Scopes: []store.ScopeAdmit{tenant}}, l)
	}
	t.Logf("%d admissions in all; waits: blocked %d, paced %d, busy %d", admitted.Load(), reasons[store.Blocked].Load(), reasons[store.Paced].Load(), reasons[store.Busy].Load())
}

// Redis loses its data mid-block (FLUSHALL, or a restart without
// persistence): the Store that holds the block re-asserts it, merged by
// maximum, so another process that never saw it is not admitted before
// the block's original end; a learned rate is back in Redis at once.
func TestLossReassertsBlocksAndRates(t *testing.T) {
	for _, loss := range []string{"flushall", "restart"} {
		t.Run(loss, func(t *testing.T) {
			srv := redistest.Start(t)
			if srv.PID() == 0 && loss == "restart" {
				t.Skip("REDIS_URL names a shared server")
			}
			if srv.PID() == 0 {
				t.Skip("REDIS_URL names a shared server: never flush it")
			}
			prefix := redistest.Prefix(t)
			ctx := context.Background()
			cfg := redisstore.Config{Prefix: prefix, Timeout: time.Second}
			a := redisstore.New(srv.NewClient(t), cfg) // saw the 429
			b := redisstore.New(srv.NewClient(t), cfg) // did not
			t.Cleanup(func() { a.Close(); b.Close() })
			const block = 3 * time.Second
			if err := a.Update(ctx, &store.Update{
				Blocks: []store.Block{{Key: "e", For: block}},
				Rates:  []store.RateUpdate{{Key: "r", Rate: 7, Burst: 2}},
			}); err != nil {
				t.Fatal(err)
			}
			end := time.Now().Add(block)
			scope := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 100}}}
			if d, err := b.Admit(ctx, scope); err != nil || d.Reason != store.Blocked {
				t.Fatalf("b.Admit before the loss = %+v, %v; want blocked", d, err)
			}
			admin := srv.NewClient(t)
			switch loss {
			case "flushall":
				if err := admin.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			case "restart":
				srv.Restart()
			}
			lostAt := time.Now()
			// b, which never saw the block, asks first: it waits, and a,
			// whose requests all wait for the block's end and call
			// nothing, re-asserts it from its guard.
			if d, err := b.Admit(ctx, scope); err != nil || d.Reason == store.Admitted {
				t.Errorf("b.Admit just after %s = %+v, %v; want a wait", loss, d, err)
			}
			time.Sleep(2 * redisstore.DefaultGuardInterval)
			if r, err := admin.HGet(ctx, "{"+prefix+"}:s:r", "r").Result(); err != nil || r != "7" {
				t.Errorf("learned rate in Redis %v after %s = %q, %v; want 7 re-asserted", 2*redisstore.DefaultGuardInterval, loss, r, err)
			}
			var first time.Time
			for time.Now().Before(end.Add(time.Second)) {
				d, err := b.Admit(ctx, scope)
				if err != nil {
					t.Fatal(err)
				}
				if d.Reason == store.Admitted {
					first = time.Now()
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			// 50ms: the two processes' clocks are one, but the test took
			// its time from before the update's round trip.
			if first.IsZero() || first.Before(end.Add(-50*time.Millisecond)) {
				t.Errorf("after %s, b was first admitted %v before the block's end, want not before it", loss, end.Sub(first))
			} else {
				t.Logf("after %s %v into a %v block, first admitted %v after its end", loss, lostAt.Sub(end.Add(-block)).Round(time.Millisecond), block, first.Sub(end).Round(time.Millisecond))
			}
			if st := a.Stats(); st.Losses != 1 {
				t.Errorf("a.Stats().Losses = %d, want 1", st.Losses)
			}
			// Lost again, with no block running (no guard): the rate is
			// back with a's next call, before that call's decision.
			if err := admin.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "r", Rate: 1}}}); err != nil {
				t.Fatal(err)
			}
			if r, err := admin.HGet(ctx, "{"+prefix+"}:s:r", "r").Result(); err != nil || r != "7" {
				t.Errorf("learned rate in Redis one call after a second loss = %q, %v; want 7 re-asserted", r, err)
			}
		})
	}
}
