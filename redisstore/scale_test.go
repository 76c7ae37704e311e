package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
)

// BenchmarkScale measures how one decision's cost and Redis's load grow
// with the clients sharing one Redis (each a Store with its own
// connection pool, as a process would be) and with the tenants they serve.
// Each operation is one request's store traffic: an admission over the
// global scope, the tenant's (a concurrency cap) and an endpoint of the
// tenant's (paced), then the release. It reports, beside ns/op (the
// wall-clock time per request over all clients):
//
//	us-decision   a client's latency per request (admit + release)
//	redis-us/op   Redis CPU per request (INFO cpu)
//	B/tenant      Redis memory per tenant with state (MEMORY USAGE of its
//	              keys)
//
// The README's table comes from
//
//	go test -run '^$' -bench BenchmarkScale -benchtime 20000x ./redisstore/
func BenchmarkScale(b *testing.B) {
	srv := redistest.Start(b)
	admin := srv.NewClient(b)
	for _, clients := range []int{2, 8, 32} {
		for _, tenants := range []int{1, 1000, 100000} {
			b.Run(fmt.Sprintf("clients=%d/tenants=%d", clients, tenants), func(b *testing.B) {
				benchScale(b, srv, admin, clients, tenants)
			})
		}
	}
}

func benchScale(b *testing.B, srv *redistest.Server, admin *redis.Client, clients, tenants int) {
	prefix := redistest.Prefix(b)
	ctx := context.Background()
	stores := make([]*redisstore.Store, clients)
	for i := range stores {
		opts := srv.Options()
		opts.PoolSize = 4
		c := redis.NewClient(opts)
		b.Cleanup(func() { c.Close() })
		stores[i] = redisstore.New(c, redisstore.Config{Prefix: prefix, Timeout: 5 * time.Second})
		b.Cleanup(func() { stores[i].Close() })
	}
	admission := func(t int) *store.Admission {
		tenant := "t" + strconv.Itoa(t)
		return &store.Admission{Scopes: []store.ScopeAdmit{
			{Key: "global", Rate: 1e9, Burst: 1e9},
			{Key: tenant, Limit: 1 << 20},
			{Key: tenant + " GET /rest/api/3/issue/{id}", Rate: 1e9, Burst: 1e9},
		}}
	}
	cpu0 := info(b, admin, "cpu", "used_cpu_user") + info(b, admin, "cpu", "used_cpu_sys")
	var next atomic.Int64
	var busy atomic.Int64 // summed client latency, ns
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, s := range stores {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				a := admission(int(i) % tenants)
				start := time.Now()
				d, err := s.Admit(ctx, a)
				if err != nil || d.Reason != store.Admitted {
					b.Errorf("Admit = %+v, %v", d, err)
					return
				}
				if err := s.Release(ctx, a, d.Lease); err != nil {
					b.Error(err)
					return
				}
				busy.Add(int64(time.Since(start)))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cpu1 := info(b, admin, "cpu", "used_cpu_user") + info(b, admin, "cpu", "used_cpu_sys")
	b.ReportMetric(float64(busy.Load())/float64(b.N)/1e3, "us-decision")
	b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "redis-us/op")
	if touched := min(tenants, b.N); touched >= 1000 {
		b.ReportMetric(float64(keysMemory(b, admin, "{"+prefix+"}*"))/float64(touched), "B/tenant")
	}
	for _, s := range stores {
		if !s.Healthy() {
			b.Fatal("a store fell back")
		}
	}
}

// keysMemory sums MEMORY USAGE over the keys that match pattern.
func keysMemory(b *testing.B, c *redis.Client, pattern string) int64 {
	ctx := context.Background()
	var total int64
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	var keys []string
	flush := func() {
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.MemoryUsage(ctx, k)
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			b.Fatal(err)
		}
		for _, cmd := range cmds {
			n, _ := cmd.(*redis.IntCmd).Result()
			total += n
		}
		keys = keys[:0]
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			flush()
		}
	}
	if err := iter.Err(); err != nil {
		b.Fatal(err)
	}
	flush()
	return total
}

// info returns one numeric field of an INFO section.
func info(b *testing.B, c *redis.Client, section, field string) float64 {
	s, err := c.Info(context.Background(), section).Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	b.Fatalf("INFO %s has no %s", section, field)
	return 0
}
