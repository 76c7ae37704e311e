package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/store"
)

// waitingCollector reports the requests waiting now in every instrumented
// Transport, summed, by scope kind and reason, read from
// [heed.Transport.Waiting] at each scrape.
type waitingCollector struct {
	desc *prometheus.Desc

	mu sync.Mutex
	ts []*heed.Transport
}

func newWaitingCollector() *waitingCollector {
	return &waitingCollector{desc: prometheus.NewDesc("heed_waiting_requests",
		"Requests waiting now before being sent, by the kind of scope that holds them and the reason.",
		[]string{"kind", "reason"}, nil)}
}

// add includes t, once.
func (c *waitingCollector) add(t *heed.Transport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.ts, t) {
		c.ts = append(c.ts, t)
	}
}

func (c *waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *waitingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ts := slices.Clone(c.ts)
	c.mu.Unlock()
	type series struct{ kind, reason string }
	// Every kind and reason is reported, zeros included, so that a series
	// does not vanish when nothing waits.
	n := make(map[series]int)
	for k := scope.KindGlobal; k <= scope.KindLimit; k++ {
		for r := store.Blocked; r <= store.Spaced; r++ {
			n[series{k.String(), r.String()}] = 0
		}
	}
	for _, t := range ts {
		for _, w := range t.Waiting() {
			n[series{w.Kind, w.Reason}] += w.N
		}
	}
	for s, v := range n {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v), s.kind, s.reason)
	}
}
