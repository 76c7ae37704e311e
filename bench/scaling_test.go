package bench

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/time/rate"

	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/store"
)

// BenchmarkDecisionScaling is the pacing decision (BenchmarkPacingDecision)
// as the keys and the callers grow: each operation asks for one of scopes
// endpoint scopes in turn (with the global scope and the tenant's
// concurrency cap, as a Jira read), from goroutines callers. The peer is
// what a program would write with x/time/rate: a limiter per key in a map
// under a read-write lock, created on first use.
func BenchmarkDecisionScaling(b *testing.B) {
	for _, scopes := range []int{1, 1000, 100_000} {
		keys := make([]string, scopes)
		for i := range keys {
			keys[i] = "endpoint https://acme.atlassian.net GET /rest/api/3/issue/" + strconv.Itoa(i)
		}
		for _, callers := range []int{1, 16, 256} {
			name := fmt.Sprintf("scopes=%d/goroutines=%d", scopes, callers)
			b.Run("heed/"+name, func(b *testing.B) {
				s := memstore.New()
				ctx := b.Context()
				run(b, callers, func() func(int) {
					// One admission per goroutine, as a Transport's requests
					// each have their own.
					a := &store.Admission{Scopes: []store.ScopeAdmit{
						{Key: "global"},
						{Key: "tenant https://acme.atlassian.net", Limit: 1 << 20},
						{Rate: 1e12, Burst: 1e6},
					}}
					return func(i int) {
						a.Scopes[2].Key = keys[i%scopes]
						d, _ := s.Admit(ctx, a)
						_ = s.Release(ctx, a, d.Lease)
					}
				})
			})
			b.Run("x-time-rate-map/"+name, func(b *testing.B) {
				var mu sync.RWMutex
				m := map[string]*rate.Limiter{}
				run(b, callers, func() func(int) {
					return func(i int) {
						k := keys[i%scopes]
						mu.RLock()
						l := m[k]
						mu.RUnlock()
						if l == nil {
							mu.Lock()
							if l = m[k]; l == nil {
								l = rate.NewLimiter(1e12, 1e6)
								m[k] = l
							}
							mu.Unlock()
						}
						l.Allow()
					}
				})
			})
		}
	}
}

// run calls an op b.N times from callers goroutines (serially for one),
// each call with its own sequence number; newOp makes each goroutine's op.
func run(b *testing.B, callers int, newOp func() func(i int)) {
	b.ReportAllocs()
	if callers == 1 {
		op := newOp()
		i := 0
		for b.Loop() {
			op(i)
			i++
		}
		return
	}
	var seq atomic.Int64
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		op := newOp()
		for pb.Next() {
			op(int(seq.Add(1)))
		}
	})
}
