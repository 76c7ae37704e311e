package bench

import (
	"context"
	"runtime"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore/redistest"
)

// at16 sets a RunParallel benchmark to 16 goroutines whatever GOMAXPROCS
// (RunParallel runs GOMAXPROCS × p of them).
func at16(b *testing.B) {
	b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
}

// BenchmarkStubAt16Goroutines is BenchmarkOverhead's stub rows at 16
// goroutines (its "parallel" rows run GOMAXPROCS, 2 on a 2-core host):
// issue 15's Transport goal is stated serial and at 16.
func BenchmarkStubAt16Goroutines(b *testing.B) {
	const url = "http://api.test/rest/api/3/issue/PROJ-1"
	for _, c := range clients(stub{}) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			at16(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					roundTrip(b, c.rt, url)
				}
			})
		})
	}
}

// BenchmarkEvalshaFloor is the ceiling of any design that runs one script
// per decision: an EVALSHA of "return 1" from go-redis, against the same
// kind of redis-server BenchmarkRedis starts, serial and at 16 goroutines.
func BenchmarkEvalshaFloor(b *testing.B) {
	srv := redistest.Start(b)
	script := redis.NewScript("return 1")
	for _, mode := range []string{"serial", "16-goroutines"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			opt := srv.Options()
			opt.PoolSize = 16
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			op := func() {
				if err := script.Run(ctx, rdb, nil).Err(); err != nil {
					b.Error(err)
				}
			}
			op() // load the script
			_, usec0 := commandStats(b, rdb)
			b.ReportAllocs()
			b.ResetTimer()
			if mode == "serial" {
				for range b.N {
					op()
				}
			} else {
				at16(b)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						op()
					}
				})
			}
			b.StopTimer()
			_, usec1 := commandStats(b, rdb)
			b.ReportMetric((usec1-usec0)/float64(b.N), "redis-µs/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}
