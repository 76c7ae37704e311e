package bench

import (
	"context"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/sethvargo/go-limiter/httplimit"
	sethmemory "github.com/sethvargo/go-limiter/memorystore"
	ululelimiter "github.com/ulule/limiter/v3"
	ululestdlib "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ululememory "github.com/ulule/limiter/v3/drivers/store/memory"
	"golang.org/x/time/rate"

	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/didip/tollbooth/v7"
	"github.com/didip/tollbooth/v7/limiter"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
)

// goLimiter is a Go rate limiter from the module registry, served on
// routes of one mux that keys each limiter on X-Client, so that heed and
// the client with no handling each have limits of their own.
type goLimiter struct {
	name, section, about string
	// realOnly: the limiter reads a clock of its own or starts a
	// goroutine that never ends, so it runs in real time only.
	realOnly bool
	routes   []tpRoute
	mux      func(t *testing.T, ok func(string) http.Handler) http.Handler
}

// goLimiters are two Go rate limiters heed was not written against:
//
//   - throttled/throttled v2: GCRA (a token bucket kept as a theoretical
//     arrival time), X-RateLimit-Limit (the burst and one), -Remaining,
//     -Reset (seconds until the bucket is full, rounded up) and, on a 429,
//     Retry-After (rounded up to a whole second).
//   - didip/tollbooth v7: x/time/rate's token bucket; RateLimit-Limit (the
//     rate, rounded), RateLimit-Remaining (tokens left) and RateLimit-Reset
//     of 1 on every answer, whatever the bucket holds; a 429 with no
//     Retry-After.
func goLimiters() []goLimiter {
	return []goLimiter{
		{
			name:    "throttled/throttled " + moduleVersion("github.com/throttled/throttled/v2"),
			section: "throttled/throttled",
			about:   "GCRA (a token bucket kept as a theoretical arrival time); X-RateLimit-Limit (the burst and one), -Remaining, -Reset (seconds until the bucket is full, rounded up); on a 429, Retry-After rounded up to a whole second",
			routes: []tpRoute{
				{name: "/t1/ 10/s burst 5", path: "/t1/", workers: 2},
				{name: "/t2/ 60/min burst 10", path: "/t2/", workers: 2},
				{name: "/t3/ 20/s no burst", path: "/t3/", workers: 2},
			},
			mux: func(t *testing.T, ok func(string) http.Handler) http.Handler {
				mux := http.NewServeMux()
				gcra := func(q throttled.RateQuota, route string) {
					st, err := memstore.NewCtx(1024)
					if err != nil {
						t.Fatal(err)
					}
					rl, err := throttled.NewGCRARateLimiterCtx(st, q)
					if err != nil {
						t.Fatal(err)
					}
					h := &throttled.HTTPRateLimiterCtx{RateLimiter: rl, VaryBy: &throttled.VaryBy{Headers: []string{"X-Client"}}}
					mux.Handle(route, h.RateLimit(ok(route)))
				}
				gcra(throttled.RateQuota{MaxRate: throttled.PerSec(10), MaxBurst: 5}, "/t1/")
				gcra(throttled.RateQuota{MaxRate: throttled.PerMin(60), MaxBurst: 10}, "/t2/")
				gcra(throttled.RateQuota{MaxRate: throttled.PerSec(20), MaxBurst: 0}, "/t3/")
				return mux
			},
		},
		{
			name:    "didip/tollbooth " + moduleVersion("github.com/didip/tollbooth/v7"),
			section: "didip/tollbooth",
			about:   "x/time/rate's token bucket; RateLimit-Limit (the rate, rounded), RateLimit-Remaining (tokens left), RateLimit-Reset of 1 on every answer; a 429 with no Retry-After",
			routes: []tpRoute{
				{name: "/b1/ 10/s burst 10", path: "/b1/", workers: 2},
				{name: "/b2/ 2.5/s burst 2", path: "/b2/", workers: 2},
			},
			mux: func(t *testing.T, ok func(string) http.Handler) http.Handler {
				mux := http.NewServeMux()
				bucket := func(rate float64, route string) {
					lmt := tollbooth.NewLimiter(rate, &limiter.ExpirableOptions{DefaultExpirationTTL: time.Hour})
					lmt.SetIPLookups([]string{"RemoteAddr"})
					lmt.SetHeader("X-Client", []string{})
					mux.Handle(route, tollbooth.LimitHandler(lmt, ok(route)))
				}
				bucket(10, "/b1/")
				bucket(2.5, "/b2/")
				return mux
			},
		},
		{
			name:    "labstack/echo " + moduleVersion("github.com/labstack/echo/v4") + " RateLimiter",
			section: "labstack/echo",
			about:   "echo's RateLimiter middleware: x/time/rate's token bucket per client; a 429 with no rate-limit headers and no Retry-After",
			routes: []tpRoute{
				{name: "/e1/ 10/s burst 10", path: "/e1/", workers: 2},
				{name: "/e2/ 20/s burst 1", path: "/e2/", workers: 2},
				{name: "/e3/ 2/s burst 5", path: "/e3/", workers: 2},
			},
			mux: func(t *testing.T, ok func(string) http.Handler) http.Handler {
				e := echo.New()
				limited := func(route string, r float64, burst int) {
					g := e.Group(strings.TrimSuffix(route, "/"), middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
						Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{Rate: rate.Limit(r), Burst: burst, ExpiresIn: time.Hour}),
						IdentifierExtractor: func(c echo.Context) (string, error) {
							return c.Request().Header.Get("X-Client"), nil
						},
					}))
					g.GET("/*", echo.WrapHandler(ok(route)))
				}
				limited("/e1/", 10, 10)
				limited("/e2/", 20, 1)
				limited("/e3/", 2, 5)
				return e
			},
		},
		{
			name:     "ulule/limiter " + moduleVersion("github.com/ulule/limiter/v3"),
			section:  "ulule/limiter",
			about:    "a fixed window per client in its memory store, opened by the window's first request; X-RateLimit-Limit, -Remaining, -Reset (epoch seconds); a 429 with no Retry-After",
			realOnly: true, // its memory store's cleaner goroutine never ends
			routes: []tpRoute{
				{name: "/u1/ 10 per 1s", path: "/u1/", workers: 2},
				{name: "/u2/ 30 per 10s", path: "/u2/", workers: 2},
			},
			mux: func(t *testing.T, ok func(string) http.Handler) http.Handler {
				mux := http.NewServeMux()
				window := func(n int64, per time.Duration, route string) {
					lim := ululelimiter.New(ululememory.NewStore(), ululelimiter.Rate{Period: per, Limit: n})
					mw := ululestdlib.NewMiddleware(lim, ululestdlib.WithKeyGetter(func(r *http.Request) string { return r.Header.Get("X-Client") }))
					mux.Handle(route, mw.Handler(ok(route)))
				}
				window(10, time.Second, "/u1/")
				window(30, 10*time.Second, "/u2/")
				return mux
			},
		},
		{
			name:     "sethvargo/go-limiter " + moduleVersion("github.com/sethvargo/go-limiter"),
			section:  "sethvargo/go-limiter",
			about:    "httplimit on its memory store: each client's tokens refill at ticks of the interval from its first request; X-RateLimit-Limit, -Remaining, and -Reset and, on a 429, Retry-After as RFC 1123 dates",
			realOnly: true, // it reads the runtime's clock, not time.Now
			routes: []tpRoute{
				{name: "/s1/ 10 per 1s", path: "/s1/", workers: 2},
				{name: "/s2/ 5 per 2s", path: "/s2/", workers: 2},
			},
			mux: func(t *testing.T, ok func(string) http.Handler) http.Handler {
				mux := http.NewServeMux()
				tokens := func(n uint64, per time.Duration, route string) {
					st, err := sethmemory.New(&sethmemory.Config{Tokens: n, Interval: per})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { st.Close(context.Background()) })
					mw, err := httplimit.NewMiddleware(st, func(r *http.Request) (string, error) { return r.Header.Get("X-Client"), nil })
					if err != nil {
						t.Fatal(err)
					}
					mux.Handle(route, mw.Handle(ok(route)))
				}
				tokens(10, time.Second, "/s1/")
				tokens(5, 2*time.Second, "/s2/")
				return mux
			},
		},
	}
}

// TestThirdPartyGoLimiters runs heed against goLimiters on a real net/http
// server on loopback, in real time, as TestThirdPartyHTTPRate does.
func TestThirdPartyGoLimiters(t *testing.T) {
	for _, lim := range goLimiters() {
		t.Run(lim.name, func(t *testing.T) {
			h := newCountingHost(func(ok func(string) http.Handler) http.Handler { return lim.mux(t, ok) })
			srv := httptest.NewServer(h)
			defer srv.Close()
			routes := tpFilter(lim.routes)
			wires := runTP(t, srv.URL, routes)
			h.count(wires)
			table := tpReport(t, lim.name, *tpFor, routes, wires, true)
			tpWrite(t, lim.section, lim.name+": "+lim.about+"; net/http on loopback; keyed per client. *accepted*: the handler's own count.", table)
		})
	}
}

// TestThirdPartyGoLimitersVirtual runs TestThirdPartyGoLimiters'
// comparisons in virtual time (as TestThirdPartyHTTPRateVirtual does),
// for -tp.vfor. Asserted, not only with HEED_STRICT_TARGETS: on the
// routes where heed meets its targets in every run, it accepts at least
// minShare of what the client with no handling does, with at most
// maxRefused of its requests refused (floors from the runs of
// 2026-12-04, less their spread).
func TestThirdPartyGoLimitersVirtual(t *testing.T) {
	floors := map[string]struct{ minShare, maxRefused float64 }{
		"/t1/": {0.95, 0.005}, // 591-595 of 605, no 429
		"/t2/": {0.90, 0.005}, // 65-68 of 70: one request is 1.4%
		"/b1/": {0.97, 0.005}, // 601-607 of 609
		"/t3/": {0.75, 0.005}, // 962-1027 of 1200, 2-3 refused
	}
	for _, lim := range goLimiters() {
		if lim.realOnly {
			continue
		}
		t.Run(lim.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				modernClock()
				h := newCountingHost(func(ok func(string) http.Handler) http.Handler { return lim.mux(t, ok) })
				routes := tpFilter(lim.routes)
				wires := runTPOver(t, *tpVirtualFor, func() http.RoundTripper {
					return handlerTransport{h: h, latency: time.Millisecond}
				}, "http://limiter.test", routes)
				h.count(wires)
				table := tpReport(t, lim.name+", virtual time", *tpVirtualFor, routes, wires, true)
				tpWrite(t, lim.section+", virtual time", lim.name+": "+lim.about+". In virtual time. *accepted*: the handler's own count.", table)
				if *tpVirtualFor < 30*time.Second {
					return // the floors are for the steady state
				}
				for _, r := range routes {
					f, ok := floors[r.path]
					if !ok {
						continue
					}
					hc, nc := wires["heed"].routes[r.path], wires["none"].routes[r.path]
					if share := float64(hc.accepted) / float64(max(nc.accepted, 1)); share < f.minShare {
						t.Errorf("%s: heed accepted %d, %.2f× none's %d; want at least %.2f×", r.name, hc.accepted, share, nc.accepted, f.minShare)
					}
					if refused := float64(hc.limited) / float64(max(hc.sent, 1)); refused > f.maxRefused {
						t.Errorf("%s: %.1f%% of heed's requests refused (%d of %d); want at most %.1f%%", r.name, 100*refused, hc.limited, hc.sent, 100*f.maxRefused)
					}
				}
			})
		})
	}
}
