// Package metrics exports what a [heed.Transport] does as Prometheus
// metrics, built on the Transport's hooks: how often and how long requests
// waited and why, throttles received, scopes blocked, retries, and
// circuit-breaker refusals.
//
//	m := metrics.New(prometheus.DefaultRegisterer)
//	t := &heed.Transport{Profile: profile.Jira()}
//	m.Instrument(t)
//
// Labels are bounded: a reason the server sends is kept only when it is
// one heed knows (Jira's RateLimit-Reason values and the like) and is
// "other" otherwise, and scopes, which grow with endpoints and tenants,
// are never labels.
package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heedhttp/heed"
)

// Metrics holds the collectors. Create it with [New]; it is safe for
// concurrent use, and one Metrics may instrument several Transports.
type Metrics struct {
	waits      *prometheus.HistogramVec
	throttles  *prometheus.CounterVec
	blocks     *prometheus.HistogramVec
	retries    prometheus.Counter
	refusals   prometheus.Counter
	collectors []prometheus.Collector
}

// New creates heed's metrics and registers them with reg (nil means not
// registered: use [Metrics.Collectors] to register them yourself). It
// panics, as prometheus.MustRegister does, if they are already registered.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "heed", Name: "wait_seconds",
			Help:    "Time requests waited before being sent, by reason: blocked, paced, busy, spaced.",
			Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"reason"}),
		throttles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "heed", Name: "throttled_total",
			Help: "Responses that were rate-limit rejections, by status and server reason.",
		}, []string{"status", "reason"}),
		blocks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "heed", Name: "block_seconds",
			Help:    "Scopes blocked, and for how long, by reason.",
			Buckets: []float64{.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"reason"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "heed", Name: "retries_total",
			Help: "Requests sent again after a throttle.",
		}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "heed", Name: "breaker_refusals_total",
			Help: "Requests refused by an open circuit breaker.",
		}),
	}
	m.collectors = []prometheus.Collector{m.waits, m.throttles, m.blocks, m.retries, m.refusals}
	if reg != nil {
		reg.MustRegister(m.collectors...)
	}
	return m
}

// Collectors returns the metrics' collectors, to register them.
func (m *Metrics) Collectors() []prometheus.Collector { return m.collectors }

// Instrument sets t's hooks to record into m, keeping any hooks t already
// had (they are called first). Call it before t is in use.
func (m *Metrics) Instrument(t *heed.Transport) {
	onWait, onLimited, onRetry, onBlock, onBreaker := t.OnWait, t.OnLimited, t.OnRetry, t.OnBlock, t.OnBreaker
	t.OnWait = func(e heed.WaitEvent) {
		if onWait != nil {
			onWait(e)
		}
		m.waits.WithLabelValues(e.Reason.String()).Observe(e.Wait.Seconds())
	}
	t.OnLimited = func(e heed.LimitedEvent) {
		if onLimited != nil {
			onLimited(e)
		}
		m.throttles.WithLabelValues(strconv.Itoa(e.StatusCode), reasonLabel(e.Reason)).Inc()
	}
	t.OnRetry = func(e heed.RetryEvent) {
		if onRetry != nil {
			onRetry(e)
		}
		m.retries.Inc()
	}
	t.OnBlock = func(e heed.BlockEvent) {
		if onBlock != nil {
			onBlock(e)
		}
		m.blocks.WithLabelValues(reasonLabel(e.Reason)).Observe(e.For.Seconds())
	}
	t.OnBreaker = func(e heed.BreakerEvent) {
		if onBreaker != nil {
			onBreaker(e)
		}
		m.refusals.Inc()
	}
}

// reasonLabel keeps the reasons heed knows and folds the rest, so that a
// server cannot grow the label set.
func reasonLabel(reason string) string {
	switch reason {
	case "":
		return "none"
	case "jira-burst-based", "jira-quota-global-based", "jira-quota-tenant-based", "jira-per-issue-on-write",
		"quota exhausted", "global", "user", "shared":
		return reason
	}
	return "other"
}
