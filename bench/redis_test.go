package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
)

// counter counts the commands a client sends: its round trips.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// commandStats returns, from INFO commandstats, how many commands Redis
// has run (scripts' own calls included) and the CPU microseconds it spent
// in scripts (EVAL and EVALSHA).
func commandStats(b testing.TB, rdb *redis.Client) (calls, scriptUsec float64) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch {
			case k == "calls":
				calls += f
			case k == "usec" && strings.HasPrefix(name, "cmdstat_eval"):
				scriptUsec += f
			}
		}
	}
	return calls, scriptUsec
}

// jiraAdmission is the admission of a typical Jira read: global, tenant
// with its concurrency cap, and the endpoint paced at 50/s.
func jiraAdmission(endpoint string) *store.Admission {
	return &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "global"},
		{Key: "https://acme.atlassian.net", Limit: 1 << 20},
		{Key: "https://acme.atlassian.net GET " + endpoint, Rate: 1e9, Burst: 1e9},
	}}
}

// BenchmarkRedis compares one heed admission (one Lua round trip over all
// of a request's scopes, then the release of its concurrency lease, which
// the next admission carries) with redis_rate's Allow on one key, against
// the same redis-server in the same run; heed-admit+update+release adds,
// between them, the update of a response that reports what is left of the
// endpoint's limit (which the next admission carries too, since the
// update has no block); heed-lease is the same in lease
// mode (redisstore.Config.Batch 64: turns booked in batches and handed out
// locally, the cap held as a share). It reports round trips and Redis CPU
// per operation; "16-goroutines" runs 16 at once.
func BenchmarkRedis(b *testing.B) {
	srv := redistest.Start(b)
	for _, c := range []struct {
		name string
		op   func(ctx context.Context, rdb *redis.Client, prefix string) func() error
	}{
		{"heed-admit", func(ctx context.Context, rdb *redis.Client, prefix string) func() error {
			s := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
			a := jiraAdmission("/rest/api/3/issue/{id}")
			a.Scopes[1].Limit = 0 // pacing and blocks only: no lease to release
			return func() error { _, err := s.Admit(ctx, a); return err }
		}},
		{"heed-admit+release", func(ctx context.Context, rdb *redis.Client, prefix string) func() error {
			s := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
			a := jiraAdmission("/rest/api/3/issue/{id}")
			return func() error {
				d, err := s.Admit(ctx, a)
				if err != nil {
					return err
				}
				return s.Release(ctx, a, d.Lease)
			}
		}},
		{"heed-admit+update+release", func(ctx context.Context, rdb *redis.Client, prefix string) func() error {
			// A request whose response reports what is left of the
			// endpoint's limit: admitted, the count learned, released.
			s := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
			a := jiraAdmission("/rest/api/3/issue/{id}")
			u := &store.Update{Rates: []store.RateUpdate{{Key: a.Scopes[2].Key, Rate: 1e9, Burst: 1e9, Free: 1e9, HasFree: true}}}
			return func() error {
				d, err := s.Admit(ctx, a)
				if err != nil {
					return err
				}
				if err := s.Update(ctx, u); err != nil {
					return err
				}
				return s.Release(ctx, a, d.Lease)
			}
		}},
		{"heed-lease-admit", func(ctx context.Context, rdb *redis.Client, prefix string) func() error {
			s := redisstore.New(rdb, redisstore.Config{Prefix: prefix, Batch: 64})
			a := jiraAdmission("/rest/api/3/issue/{id}")
			a.Scopes[1].Limit = 0
			return func() error { _, err := s.Admit(ctx, a); return err }
		}},
		{"heed-lease-admit+release", func(ctx context.Context, rdb *redis.Client, prefix string) func() error {
			s := redisstore.New(rdb, redisstore.Config{Prefix: prefix, Batch: 64})
			a := jiraAdmission("/rest/api/3/issue/{id}")
			a.Scopes[1].Limit = 1024 // the most a share holds
			return func() error {
				d, err := s.Admit(ctx, a)
				if err != nil {
					return err
				}
				if d.Reason != store.Admitted {
					return fmt.Errorf("not admitted: %+v", d)
				}
				return s.Release(ctx, a, d.Lease)
			}
		}},
		{"redis_rate-allow", func(ctx context.Context, rdb *redis.Client, prefix string) func() error {
			l := redis_rate.NewLimiter(rdb)
			limit := redis_rate.Limit{Rate: 1 << 30, Burst: 1 << 30, Period: 1}
			return func() error { _, err := l.Allow(ctx, prefix+":endpoint", limit); return err }
		}},
	} {
		for _, parallel := range []bool{false, true} {
			mode := map[bool]string{false: "serial", true: "16-goroutines"}[parallel]
			b.Run(c.name+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				opt := srv.Options()
				opt.PoolSize = 16
				rdb := redis.NewClient(opt)
				defer rdb.Close()
				op := c.op(ctx, rdb, redistest.Prefix(b))
				if err := op(); err != nil { // load the scripts
					b.Fatal(err)
				}
				_, usec0 := commandStats(b, rdb)
				var cnt counter
				rdb.AddHook(&cnt)
				b.ReportAllocs()
				b.ResetTimer()
				if parallel {
					// RunParallel runs GOMAXPROCS × p goroutines.
					b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := op(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				} else {
					for range b.N {
						if err := op(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				trips := cnt.n.Load()
				_, usec1 := commandStats(b, rdb)
				b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/op")
				b.ReportMetric((usec1-usec0)/float64(b.N), "redis-µs/op")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
		}
	}
}

// TestRedisMemoryPerIdleScope measures what one idle scope costs in Redis
// (its pacing hash; concurrency leases expire), and that idle scopes vanish.
func TestRedisMemoryPerIdleScope(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient(t)
	ctx := context.Background()
	used := func() float64 {
		info, _ := rdb.Info(ctx, "memory").Result()
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return 0
	}
	s := redisstore.New(rdb, redisstore.Config{Prefix: redistest.Prefix(t)})
	before := used()
	const n = 5000
	for i := range n {
		if _, err := s.Admit(ctx, jiraAdmission(fmt.Sprintf("/files/f%dx", i))); err != nil {
			t.Fatal(err)
		}
	}
	per := (used() - before) / n
	t.Logf("memory per idle scope: %.0f bytes (%d endpoint scopes)", per, n)
	if per > 2048 {
		t.Errorf("each scope costs %.0f bytes in Redis, want under 2 KiB", per)
	}
}
