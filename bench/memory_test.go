package bench

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/memstore"
)

var memPaths = flag.Int("paths", 200_000, "distinct paths TestMemoryCeiling sends")

// ceilingMiB is the memory heed's zero-config Transport holds, however many
// distinct endpoints report limits of their own: the memory store's
// DefaultMaxScopes scopes (about 24 MiB with their keys) and the learner's
// maps of at most learn.MaxEntries entries each, with room for the
// garbage collector's timing.
const ceilingMiB = 64

// advertising answers every request with a limit of the endpoint's own
// (an IETF draft-8 policy), as a server with per-route limiters does.
type advertising struct{}

func (advertising) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"route";q=100;w=10`)
	h.Set("RateLimit", `"route";r=99;t=10`)
	return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: req}, nil
}

// A Transport sent requests to many distinct endpoints, each reporting a
// limit of its own, holds a bounded amount of memory: the heap after the
// run, less before, stays under ceilingMiB, and the store under its
// DefaultMaxScopes, which it keeps by dropping the scopes used least
// recently a few at a time (the longest call is logged: a sweep of the
// whole map had stalled one call in 8,000 for 10-37 ms). The paths are distinct in a literal segment
// ("/v1/acct-17/orders"), which heed takes for a new endpoint until the
// position has shown enough values to be learned as an id.
func TestMemoryCeiling(t *testing.T) {
	st := memstore.New()
	tr := &heed.Transport{Base: advertising{}, Store: st, Concurrency: -1}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	peak := 0
	calls := timeCalls(t, tr, *memPaths, func(i int) {
		if i%1024 == 0 {
			peak = max(peak, st.Len())
		}
	})
	// The same calls to the stub alone: what this host's scheduler and
	// the runtime stop a call for, with no heed in it.
	bare := timeCalls(t, advertising{}, *memPaths, func(int) {})
	after := heap()
	grew := (float64(after) - float64(before)) / (1 << 20)
	// Figures for BENCHMARKS.md; the times are the machine's, not asserted.
	// The store's own work per call is bounded (its ring looks at two
	// scopes a call); what else stops a call is the runtime's: the longest
	// pause the garbage collector stopped the world for, beside it.
	t.Logf("FIGURES memory: %d distinct paths in %v (%.2f µs each), heap +%.1f MiB, store %d scopes at the end (peak sampled %d), longest call %v, %d calls over 1ms (%.0f a second; the stub alone: %v, %d, %.0f a second), longest GC pause up to %v",
		*memPaths, calls.elapsed.Round(time.Millisecond), float64(calls.elapsed.Microseconds())/float64(*memPaths), grew, st.Len(), peak, calls.worst.Round(time.Microsecond),
		calls.slow, calls.slowPerSecond(), bare.worst.Round(time.Microsecond), bare.slow, bare.slowPerSecond(), longestGCPause().Round(time.Microsecond))
	if grew > ceilingMiB {
		t.Errorf("the heap grew by %.1f MiB over %d distinct paths, want at most %d MiB", grew, *memPaths, ceilingMiB)
	}
	if n := st.Len(); n > memstore.DefaultMaxScopes || peak > memstore.DefaultMaxScopes {
		t.Errorf("the store holds %d scopes (peak %d), want at most DefaultMaxScopes, %d", n, peak, memstore.DefaultMaxScopes)
	}
}

// callTimes is how long a run of calls took: in all, the longest one, and
// how many took over a millisecond.
type callTimes struct {
	elapsed, worst time.Duration
	slow           int
}

func (c callTimes) slowPerSecond() float64 { return float64(c.slow) / c.elapsed.Seconds() }

// timeCalls sends n requests through rt, each to a distinct path, timing
// each; after(i) runs after request i, untimed.
func timeCalls(t *testing.T, rt http.RoundTripper, n int, after func(i int)) callTimes {
	t.Helper()
	var c callTimes
	start := time.Now()
	for i := range n {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://api.test/v1/acct-%d/orders", i), nil)
		began := time.Now()
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(began)
		c.worst = max(c.worst, took)
		if took > time.Millisecond {
			c.slow++
		}
		after(i)
	}
	c.elapsed = time.Since(start)
	return c
}

// longestGCPause returns the upper bound of the longest stop-the-world
// pause for garbage collection this process has had, from the runtime's
// histogram of them.
func longestGCPause() time.Duration {
	sample := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := sample[0].Value.Float64Histogram()
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] > 0 {
			return time.Duration(min(h.Buckets[i+1], 3600) * float64(time.Second))
		}
	}
	return 0
}
