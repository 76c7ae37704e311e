package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heedhttp/heed/metrics"
)

// readyEvery is how long a readiness result is reused, so that a status
// page polling every second does not dial the upstream every second.
const readyEvery = 2 * time.Second

type readiness struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// serveOwn serves the proxy's own endpoints under /_heed/.
func (h *Handler) serveOwn(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_heed":
		http.Redirect(w, r, "/_heed/", http.StatusFound)
	case "/_heed/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
		_, _ = w.Write([]byte(statusPage))
	case "/_heed/status.json":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(h.Status(r.Context()))
	case "/_heed/metrics":
		promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	case "/_heed/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	case "/_heed/readyz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := h.check(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	default:
		http.NotFound(w, r)
	}
}

// check reports whether the upstream accepts connections and Ready
// passes, reusing a result younger than readyEvery.
func (h *Handler) check(ctx context.Context) error {
	h.ready.mu.Lock()
	defer h.ready.mu.Unlock()
	if !h.ready.at.IsZero() && time.Since(h.ready.at) < readyEvery {
		return h.ready.err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var errs []error
	if h.Ready != nil {
		if err := h.Ready(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if h.Upstream != nil {
		host, port := h.Upstream.Hostname(), h.Upstream.Port()
		if port == "" {
			port = "443"
			if h.Upstream.Scheme == "http" {
				port = "80"
			}
		}
		dial := h.Dial
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		c, err := dial(ctx, "tcp", net.JoinHostPort(host, port))
		if err != nil {
			errs = append(errs, errors.New("upstream unreachable: "+err.Error()))
		} else {
			_ = c.Close()
		}
	}
	h.ready.at, h.ready.err = time.Now(), errors.Join(errs...)
	return h.ready.err
}

// Status returns what the proxy knows now, as the status page shows it.
func (h *Handler) Status(ctx context.Context) Status {
	h.init()
	now := time.Now()
	st := Status{Now: now, Store: h.StoreName, Buffered: h.mem.inUse()}
	if st.Store == "" {
		st.Store = "memory"
	}
	if h.Upstream != nil {
		st.Upstream = h.Upstream.Redacted()
	}
	if err := h.check(ctx); err != nil {
		st.ReadyErr = err.Error()
	} else {
		st.Ready = true
	}
	if h.Cache != nil {
		cs := h.Cache.Stats()
		st.Cache = &cs
		if n := cs.Hits + cs.Misses; n > 0 {
			st.HitRate = float64(cs.Hits) / float64(n)
		}
	}
	h.track.snapshot(&st, now)
	return st
}

func (h *Handler) answered(kind string) {
	h.track.answered(kind)
	if h.answers != nil {
		h.answers.WithLabelValues(kind).Inc()
	}
}

// registry builds the Prometheus registry /_heed/metrics serves: heed's
// metrics (package metrics), the proxy's own, and the Go runtime's.
func (h *Handler) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	metrics.New(reg).Instrument(h.tr)
	h.answers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "heed", Subsystem: "proxy", Name: "answers_total",
		Help: "Answers the proxy made itself, by kind: cache, blocked, paced, spaced, busy, circuit_open, upstream_error, bad_request.",
	}, []string{"kind"})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "heed", Subsystem: "proxy", Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "heed", Subsystem: "proxy", Name: name, Help: help}, f)
	}
	cacheStat := func(f func(CacheStats) float64) func() float64 {
		return func() float64 {
			if h.Cache == nil {
				return 0
			}
			return f(h.Cache.Stats())
		}
	}
	reg.MustRegister(h.answers,
		counter("requests_total", "Requests forwarded or answered.", func() float64 { return float64(h.track.requests.Load()) }),
		gauge("in_flight", "Requests being handled.", func() float64 { return float64(h.track.inFlight.Load()) }),
		gauge("waiting", "Requests waiting before their send.", func() float64 { return float64(h.track.waiting.Load()) }),
		gauge("buffered_bytes", "Bytes of request bodies and response copies held.", func() float64 { return float64(h.mem.inUse()) }),
		gauge("cache_entries", "Responses in the cache.", cacheStat(func(s CacheStats) float64 { return float64(s.Entries) })),
		gauge("cache_bytes", "Bytes the cache holds, headers and keys counted.", cacheStat(func(s CacheStats) float64 { return float64(s.Bytes) })),
		counter("cache_hits_total", "Paused requests answered from the cache.", cacheStat(func(s CacheStats) float64 { return float64(s.Hits) })),
		counter("cache_misses_total", "Paused GETs the cache had no copy for.", cacheStat(func(s CacheStats) float64 { return float64(s.Misses) })),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}
