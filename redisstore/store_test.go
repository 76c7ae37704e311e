package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

// newStores returns a storetest.NewStore of Stores on c, each under its own
// prefix, that fail the test if they ever leave Redis.
func newStores(c redisstore.Client) storetest.NewStore {
	return func(t *testing.T, now func() time.Time) store.Store {
		s := redisstore.New(c, redisstore.Config{
			Prefix:  redistest.Prefix(t),
			Timeout: 5 * time.Second, // -race on a busy machine: never fall back here
			Now:     now,
			OnHealth: func(e redisstore.HealthEvent) {
				t.Errorf("store left Redis: %v", e.Err)
			},
		})
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, newStores(srv.NewClient(t)))
}

func TestDifferentialWithMemoryStore(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Differential(t, newStores(srv.NewClient(t)))
}

// Two Stores on one Redis and prefix, as in two processes, are one client.
func TestStoresShareState(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	cfg := redisstore.Config{Prefix: prefix, Now: clock.Now, Timeout: 5 * time.Second}
	a := redisstore.New(srv.NewClient(t), cfg)
	b := redisstore.New(srv.NewClient(t), cfg)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()

	tenant := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}}}
	d, err := a.Admit(ctx, tenant)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("a.Admit = %+v, %v; want admitted", d, err)
	}
	if d2, err := b.Admit(ctx, tenant); err != nil || d2.Reason != store.Busy {
		t.Errorf("b.Admit while a holds the only slot = %+v, %v; want busy", d2, err)
	}
	if err := b.Release(ctx, tenant, d.Lease); err != nil { // any process may release
		t.Fatal(err)
	}
	if d2, err := b.Admit(ctx, tenant); err != nil || d2.Reason != store.Admitted {
		t.Errorf("b.Admit after release = %+v, %v; want admitted", d2, err)
	}

	if err := a.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "e", For: 3 * time.Second}}}); err != nil {
		t.Fatal(err)
	}
	e := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 1}}}
	if d, _ := b.Admit(ctx, e); d.Reason != store.Blocked || d.Wait != 3*time.Second {
		t.Errorf("b.Admit after a stored a 3s block = %+v, want blocked for 3s", d)
	}
	clock.Advance(3 * time.Second)
	if d, _ := a.Admit(ctx, e); d.Reason != store.Admitted {
		t.Errorf("a.Admit after the block = %+v, want admitted", d)
	}
	if d, _ := b.Admit(ctx, e); d.Reason != store.Paced || d.Wait != time.Second {
		t.Errorf("b.Admit right after a's = %+v, want paced for 1s", d)
	}
}

// Without Config.Now, decisions are on the Redis server's clock.
func TestServerClock(t *testing.T) {
	srv := redistest.Start(t)
	s := redisstore.New(srv.NewClient(t), redisstore.Config{Prefix: redistest.Prefix(t), Timeout: 5 * time.Second})
	ctx := context.Background()
	a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 1, Burst: 1}, {Key: "w", Gap: time.Hour}}}
	d, err := s.Admit(ctx, a)
	if err != nil || d.Reason != store.Admitted || d.Lease == 0 {
		t.Fatalf("Admit = %+v, %v; want admitted with a lease", d, err)
	}
	// The second request waits about a second; the server's clock has
	// moved by the round trip in between, never by more than the wait.
	d2, err := s.Admit(ctx, &store.Admission{Scopes: a.Scopes[:1]})
	if err != nil || d2.Reason != store.Paced || d2.Wait <= 0 || d2.Wait > time.Second {
		t.Errorf("second Admit = %+v, %v; want paced for at most 1s", d2, err)
	}
	if err := s.Release(ctx, a, d.Lease); err != nil {
		t.Fatal(err)
	}
	d3, err := s.Admit(ctx, &store.Admission{Scopes: a.Scopes[1:]})
	if err != nil || d3.Reason != store.Spaced || d3.Wait <= 59*time.Minute || d3.Wait > time.Hour {
		t.Errorf("Admit after release = %+v, %v; want spaced for about an hour", d3, err)
	}
}

// Every key starts with the prefix's hash tag, so that one script may touch
// them all in Redis Cluster, and every key expires.
func TestKeysShareOneSlotAndExpire(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.NewClient(t)
	clock := storetest.NewClock()
	prefix := redistest.Prefix(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Now: clock.Now, Timeout: 5 * time.Second})
	defer s.Close()
	ctx := context.Background()
	a := &store.Admission{
		Scopes:   []store.ScopeAdmit{{Key: "tenant", Limit: 2}, {Key: "GET /x", Rate: 5}, {Key: "issue 1", Gap: time.Second}},
		LeaseTTL: 30 * time.Second,
	}
	d, err := s.Admit(ctx, a)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit = %+v, %v", d, err)
	}
	if err := s.Update(ctx, &store.Update{
		Blocks: []store.Block{{Key: "blocked", For: time.Minute}},
		Rates:  []store.RateUpdate{{Key: "learned", Rate: 3, TTL: 5 * time.Minute}},
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "{"+prefix+"}*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{ // key -> the longest deadline it holds
		":s:GET /x":  200 * time.Millisecond,
		":l:tenant":  30 * time.Second,
		":l:issue 1": 30 * time.Second,
		":s:blocked": time.Minute,
		":s:learned": 5 * time.Minute,
		":e":         30*24*time.Hour - time.Minute, // the epoch: 30 days, refreshed by every update
		":i":         30*24*time.Hour - time.Minute, // the index of learned scopes (Config.MaxScopes), as long
	}
	if len(keys) != len(want) {
		t.Errorf("keys = %q, want %d keys", keys, len(want))
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "{"+prefix+"}:") {
			t.Errorf("key %q lacks the hash tag {%s}", k, prefix)
		}
		deadline, ok := want[strings.TrimPrefix(k, "{"+prefix+"}")]
		if !ok {
			t.Errorf("unexpected key %q", k)
			continue
		}
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl < deadline || ttl > deadline+time.Minute {
			t.Errorf("PTTL(%q) = %v, want a little more than %v", k, ttl, deadline)
		}
	}
}

// The hot path allocates only what go-redis needs to send a command and
// read its reply: the Store's own arguments come from pooled buffers.
func TestAdmitAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	srv := redistest.Start(t)
	s := redisstore.New(srv.NewClient(t), redisstore.Config{Prefix: redistest.Prefix(t), Timeout: 5 * time.Second})
	a := &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "global", Rate: 1e9, Burst: 1e9},
		{Key: "tenant", Limit: 1 << 30},
		{Key: "endpoint", Rate: 1e9, Burst: 1e9},
	}}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		if d, err := s.Admit(ctx, a); err != nil || d.Reason != store.Admitted {
			t.Fatalf("Admit = %+v, %v", d, err)
		}
	})
	// 25 at the time of writing: 6 for the timeout context, 16 inside
	// go-redis (a boxed argument per key among them, the epoch key and
	// the lease's undo marker included), 3 of the Store's.
	if allocs > 26 {
		t.Errorf("Admit allocates %v times, want at most 26", allocs)
	}
}

// Learned state in Redis has a ceiling by count (Config.MaxScopes): many
// distinct endpoints learned one after another leave at most MaxScopes
// scopes and a few, each new one dropping those learned longest ago;
// a scope holding a block is never dropped.
func TestLearnedScopesHaveACeiling(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.NewClient(t)
	prefix := redistest.Prefix(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Timeout: 5 * time.Second, MaxScopes: 50})
	defer s.Close()
	ctx := context.Background()
	rate := func(key string) store.RateUpdate {
		return store.RateUpdate{Key: key, Rate: 5, Burst: 1, TTL: time.Hour}
	}
	if err := s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "blocked", For: time.Hour}}, Rates: []store.RateUpdate{rate("blocked")}}); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := s.Update(ctx, &store.Update{Rates: []store.RateUpdate{rate(fmt.Sprintf("endpoint %d", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := c.Keys(ctx, "{"+prefix+"}:s:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 50 {
		t.Errorf("Redis holds %d scopes after 501 learned, want at most MaxScopes, 50", len(keys))
	}
	if len(keys) < 40 {
		t.Errorf("Redis holds %d scopes after 501 learned, want about MaxScopes, 50: the newest are kept", len(keys))
	}
	d, err := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "blocked"}}})
	if err != nil || d.Reason != store.Blocked {
		t.Errorf("the blocked scope: %+v, %v, want still blocked", d, err)
	}
	d, err = s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "endpoint 499"}}})
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("the newest scope: %+v, %v", d, err)
	}
	if d, _ = s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: "endpoint 499"}}}); d.Reason != store.Paced {
		t.Errorf("the newest scope's second admission: %v, want paced at its learned 5/s", d.Reason)
	}
}
