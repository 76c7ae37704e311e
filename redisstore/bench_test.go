package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
)

// benchAdmission is a typical request: tenant concurrency cap, endpoint
// pacing and a global scope; rates high enough never to wait.
func benchAdmission() *store.Admission {
	return &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "global", Rate: 1e9, Burst: 1e9},
		{Key: "tenant https://example.atlassian.net", Limit: 1 << 30},
		{Key: "endpoint GET /rest/api/3/issue/{id}", Rate: 1e9, Burst: 1e9},
	}}
}

func benchStore(b *testing.B) *redisstore.Store {
	srv := redistest.Start(b)
	opts := srv.Options()
	opts.PoolSize = 64
	c := redis.NewClient(opts)
	b.Cleanup(func() { c.Close() })
	s := redisstore.New(c, redisstore.Config{Prefix: redistest.Prefix(b), Timeout: 5 * time.Second})
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkAdmit is one admission over three scopes: one round trip.
func BenchmarkAdmit(b *testing.B) {
	s := benchStore(b)
	a := benchAdmission()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := s.Admit(ctx, a)
		if err != nil || d.Reason != store.Admitted {
			b.Fatalf("Admit = %+v, %v", d, err)
		}
		if !s.Healthy() {
			b.Fatal("fell back")
		}
	}
}

// BenchmarkAdmitParallel is BenchmarkAdmit from GOMAXPROCS*8 goroutines.
func BenchmarkAdmitParallel(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		a := benchAdmission()
		for pb.Next() {
			d, err := s.Admit(ctx, a)
			if err != nil || d.Reason != store.Admitted {
				b.Errorf("Admit = %+v, %v", d, err)
				return
			}
		}
	})
	if !s.Healthy() {
		b.Fatal("fell back")
	}
}

// BenchmarkAdmitRelease is a request's whole store traffic: admit and
// release, one round trip (each admission carries the release before it).
func BenchmarkAdmitRelease(b *testing.B) {
	s := benchStore(b)
	a := benchAdmission()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := s.Admit(ctx, a)
		if err != nil || d.Reason != store.Admitted {
			b.Fatalf("Admit = %+v, %v", d, err)
		}
		if err := s.Release(ctx, a, d.Lease); err != nil {
			b.Fatal(err)
		}
	}
}
