package workload

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

// Allowance is what a server's limits allow a workload: how fast it can go
// and how soon it can be done.
type Allowance struct {
	// Rate is the workload's allowed steady rate, in operations per
	// second: the aggregate rate at which no limit's steady rate is
	// exceeded, given the share of the operations each limit's scopes
	// receive. Limits the workload cannot exhaust (a quota larger than what
	// it sends) do not bound it. Zero means unbounded.
	Rate float64
	// Ideal is the least time the workload can take: the longest any one
	// scope needs to admit its share, using its burst (a bucket's
	// capacity, a window's first quota) and then its steady rate, or the
	// time the workers need at the server's latency, whichever is longer.
	Ideal time.Duration
	// Bottleneck names the limit and scope that set Ideal.
	Bottleneck string
}

// Allow returns what limits (nil means the profile's defaults) at scale
// allow the workload's operations, with every response taking latency.
// Limits counted in tokens are not considered.
func (w *Workload) Allow(p sim.Provider, limits []sim.Limit, scale float64, latency time.Duration) Allowance {
	if limits == nil {
		limits = sim.DefaultLimits(p)
	}
	if scale == 0 {
		scale = 1
	}
	ops := w.Items()
	n := float64(len(ops))
	var a Allowance
	if latency > 0 {
		a.Ideal = time.Duration(math.Ceil(n/float64(w.NumWorkers()))) * latency
		a.Bottleneck = "latency"
	}
	for _, l := range limits {
		if l.Kind == sim.Concurrency || l.Unit == sim.Tokens {
			continue
		}
		window := l.Window
		if window <= 0 {
			window = time.Second
		}
		quota := max(1, l.Quota*scale)
		capacity := quota
		if l.Kind != sim.FixedWindow && l.Burst > 0 {
			capacity = max(1, l.Burst*scale)
		}
		rate := quota / window.Seconds()
		counts := map[string]float64{}
		for _, op := range ops {
			if k, ok := limitScope(&l, &op); ok {
				counts[k]++
			}
		}
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			c := counts[k]
			var need time.Duration
			if l.Kind == sim.FixedWindow {
				need = time.Duration(math.Ceil(c/quota)-1) * window
			} else {
				need = time.Duration(max(0, c-capacity) / rate * float64(time.Second))
			}
			if c > capacity && (a.Rate == 0 || rate*n/c < a.Rate) {
				a.Rate = rate * n / c
			}
			if need > a.Ideal {
				a.Ideal, a.Bottleneck = need, l.Name+" "+k
			}
		}
	}
	return a
}

// limitScope returns the instance of l that op counts against, the way the
// simulator keys it, and false when l does not apply to op.
func limitScope(l *sim.Limit, op *Op) (string, bool) {
	if l.Methods != nil && !slices.Contains(l.Methods, op.Method) {
		return "", false
	}
	path, _, _ := strings.Cut(op.Path, "?")
	if l.Path != "" && !strings.HasPrefix(path, l.Path) {
		return "", false
	}
	switch l.Per {
	case sim.PerGlobal:
		return "global", true
	case sim.PerEndpoint:
		return op.Tenant + " " + profile.EndpointKey(op.Method, path), true
	case sim.PerKey:
		k := l.Key(&sim.Request{Method: op.Method, Path: path, Tenant: op.Tenant,
			Endpoint: profile.EndpointKey(op.Method, path), Header: http.Header{}, Body: op.Body})
		return op.Tenant + " " + k, k != ""
	}
	return op.Tenant, true
}
