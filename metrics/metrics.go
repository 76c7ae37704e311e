// Package metrics exports what a [heed.Transport] does as Prometheus
// metrics, built on the Transport's hooks: how often and how long requests
// waited and why, how many wait now, throttles received, scopes blocked,
// how close each limit is to exhaustion, retries and the retry budget,
// circuit-breaker refusals, what shadow mode would have done, and whether
// the store has fallen back to local state.
//
//	m := metrics.New(prometheus.DefaultRegisterer)
//	t := &heed.Transport{Profile: profile.Jira()}
//	m.Instrument(t)
//
// Labels are bounded: a reason the server sends is kept only when it is
// one heed knows (Jira's RateLimit-Reason values and the like) and is
// "other" otherwise; limits keep their names for the first [MaxLimits]
// distinct names and are "other" after; and scopes, which grow with
// endpoints and tenants, are never labels.
//
// The metrics, with their labels:
//
//	heed_wait_seconds{reason}                  histogram: waits before sending (blocked, paced, busy, spaced)
//	heed_waiting_requests{kind,reason}         gauge: requests waiting now, by scope kind and reason
//	heed_throttled_total{status,reason}        counter: throttle responses
//	heed_block_seconds{reason}                 histogram: scopes blocked, and for how long
//	heed_retries_total{status_class}           counter: retries made, of a "throttle", a "5xx" or an "error"
//	heed_retry_budget_denied_total             counter: retries of server errors the retry budget refused
//	heed_breaker_refusals_total                counter: requests refused by an open circuit breaker
//	heed_limit_utilization{limit,unit}         gauge: 1 - remaining/quota, as last advertised
//	heed_limit_remaining{limit,unit}           gauge: units remaining, as last advertised
//	heed_shadow_waits_total{reason,refused}    counter: waits shadow mode skipped ("true": it would have refused)
//	heed_shadow_wait_seconds{reason}           histogram: how long those requests would have waited
//	heed_shadow_retries_total{status_class}    counter: retries shadow mode would have made
//	heed_store_healthy                         gauge: 1 on the shared store, 0 fallen back (see [Metrics.StoreHealth])
//	heed_store_switches_total                  counter: switches between the shared store and the fallback
package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/internal/labels"
)

// Metrics holds the collectors. Create it with [New]; it is safe for
// concurrent use, and one Metrics may instrument several Transports: their
// counts add up, and a limit's gauges hold what any of them last saw.
type Metrics struct {
	waits         *prometheus.HistogramVec
	throttles     *prometheus.CounterVec
	blocks        *prometheus.HistogramVec
	retries       *prometheus.CounterVec
	refusals      prometheus.Counter
	denied        prometheus.Counter
	utilization   *prometheus.GaugeVec
	remaining     *prometheus.GaugeVec
	shadowWaits   *prometheus.CounterVec
	shadowSeconds *prometheus.HistogramVec
	shadowRetries *prometheus.CounterVec
	storeHealthy  prometheus.Gauge
	storeSwitches prometheus.Counter
	waiting       *waitingCollector
	collectors    []prometheus.Collector

	limits labels.LimitNames

	storeMu   sync.Mutex
	unhealthy bool
}

var waitBuckets = []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New creates heed's metrics and registers them with reg (nil means not
// registered: use [Metrics.Collectors] to register them yourself). It
// panics, as prometheus.MustRegister does, if they are already registered.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "heed", Name: "wait_seconds",
			Help:    "Time requests waited before being sent, by reason: blocked, paced, busy, spaced.",
			Buckets: waitBuckets,
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
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "heed", Name: "retries_total",
			Help: "Requests sent again, by what was retried: throttle, 5xx or error (a transport error).",
		}, []string{"status_class"}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "heed", Name: "breaker_refusals_total",
			Help: "Requests refused by an open circuit breaker.",
		}),
		denied: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "heed", Name: "retry_budget_denied_total",
			Help: "Retries of server or transport errors not made because the retry budget was spent.",
		}),
		utilization: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "heed", Name: "limit_utilization",
			Help: "Share of each limit used (1 - remaining/quota), as the server last advertised it.",
		}, []string{"limit", "unit"}),
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "heed", Name: "limit_remaining",
			Help: "Units left of each limit, as the server last advertised it.",
		}, []string{"limit", "unit"}),
		shadowWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "heed", Name: "shadow_waits_total",
			Help: "Waits shadow mode reported and did not make, by reason, and whether the request would have been refused.",
		}, []string{"reason", "refused"}),
		shadowSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "heed", Name: "shadow_wait_seconds",
			Help:    "Time requests would have waited before being sent, in shadow mode, by reason.",
			Buckets: waitBuckets,
		}, []string{"reason"}),
		shadowRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "heed", Name: "shadow_retries_total",
			Help: "Retries shadow mode reported and did not make, by what would have been retried.",
		}, []string{"status_class"}),
		storeHealthy: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "heed", Name: "store_healthy",
			Help: "1 while the store uses its shared backend (Redis), 0 while it has fallen back to local state.",
		}),
		storeSwitches: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "heed", Name: "store_switches_total",
			Help: "Switches of the store between its shared backend and the local fallback.",
		}),
		waiting: newWaitingCollector(),
	}
	m.storeHealthy.Set(1)
	m.collectors = []prometheus.Collector{m.waits, m.throttles, m.blocks, m.retries, m.refusals,
		m.denied, m.utilization, m.remaining, m.shadowWaits, m.shadowSeconds, m.shadowRetries,
		m.storeHealthy, m.storeSwitches, m.waiting}
	if reg != nil {
		reg.MustRegister(m.collectors...)
	}
	return m
}

// Collectors returns the metrics' collectors, to register them.
func (m *Metrics) Collectors() []prometheus.Collector { return m.collectors }

// Instrument sets t's hooks to record into m, keeping any hooks t already
// had (they are called first), and includes t's waiting requests in
// heed_waiting_requests (m keeps t for that). Call it before t is in use,
// once per Transport.
func (m *Metrics) Instrument(t *heed.Transport) {
	m.waiting.add(t)
	onWait, onLimited, onRetry, onBlock, onBreaker, onLimits := t.OnWait, t.OnLimited, t.OnRetry, t.OnBlock, t.OnBreaker, t.OnLimits
	t.OnWait = func(e heed.WaitEvent) {
		if onWait != nil {
			onWait(e)
		}
		m.wait(e)
	}
	t.OnLimited = func(e heed.LimitedEvent) {
		if onLimited != nil {
			onLimited(e)
		}
		m.throttles.WithLabelValues(strconv.Itoa(e.StatusCode), labels.Reason(e.Reason)).Inc()
	}
	t.OnRetry = func(e heed.RetryEvent) {
		if onRetry != nil {
			onRetry(e)
		}
		m.retry(e)
	}
	t.OnBlock = func(e heed.BlockEvent) {
		if onBlock != nil {
			onBlock(e)
		}
		m.blocks.WithLabelValues(labels.Reason(e.Reason)).Observe(e.For.Seconds())
	}
	t.OnBreaker = func(e heed.BreakerEvent) {
		if onBreaker != nil {
			onBreaker(e)
		}
		m.refusals.Inc()
	}
	t.OnLimits = func(e heed.LimitsEvent) {
		if onLimits != nil {
			onLimits(e)
		}
		m.limitsSeen(e.Limits)
	}
}

func (m *Metrics) wait(e heed.WaitEvent) {
	reason := e.Reason.String()
	if !e.Shadow {
		m.waits.WithLabelValues(reason).Observe(e.Wait.Seconds())
		return
	}
	m.shadowWaits.WithLabelValues(reason, strconv.FormatBool(e.Refused)).Inc()
	m.shadowSeconds.WithLabelValues(reason).Observe(e.Wait.Seconds())
}

func (m *Metrics) retry(e heed.RetryEvent) {
	switch {
	case e.Denied:
		m.denied.Inc()
	case e.Shadow:
		m.shadowRetries.WithLabelValues(labels.RetryClass(e.StatusCode, e.Throttled)).Inc()
	default:
		m.retries.WithLabelValues(labels.RetryClass(e.StatusCode, e.Throttled)).Inc()
	}
}

func (m *Metrics) limitsSeen(limits []heed.Limit) {
	for i := range limits {
		l := &limits[i]
		if l.Remaining < 0 {
			continue // nothing to say of how close it is
		}
		name, unit := m.limits.Label(l.Name, l.Scope), labels.Unit(l.Unit)
		m.remaining.WithLabelValues(name, unit).Set(l.Remaining)
		if l.Quota > 0 {
			m.utilization.WithLabelValues(name, unit).Set(utilization(l.Remaining, l.Quota))
		}
	}
}

// utilization is the share of quota used, in [0, 1].
func utilization(remaining, quota float64) float64 {
	return min(max((quota-remaining)/quota, 0), 1)
}

// StoreHealth records the store's state: healthy when it uses its shared
// backend, false when it has fallen back to local state. Wire it to
// redisstore's Config.OnHealth:
//
//	OnHealth: func(e redisstore.HealthEvent) { m.StoreHealth(e.Healthy) },
//
// A store starts healthy; each change of state counts one switch, and a
// report of the state already recorded counts none. One Metrics follows one
// store.
func (m *Metrics) StoreHealth(healthy bool) {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	if healthy != m.unhealthy {
		return
	}
	m.unhealthy = !healthy
	m.storeSwitches.Inc()
	if healthy {
		m.storeHealthy.Set(1)
	} else {
		m.storeHealthy.Set(0)
	}
}
