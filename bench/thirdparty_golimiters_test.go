package bench

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/didip/tollbooth/v7"
	"github.com/didip/tollbooth/v7/limiter"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
)

// TestThirdPartyGoLimitersVirtual runs heed against two more Go rate
// limiters from the module registry that heed was not written against,
// each in virtual time as TestThirdPartyHTTPRateVirtual runs httprate:
//
//   - throttled/throttled v2: GCRA (a token bucket read as a theoretical
//     arrival time), X-RateLimit-Limit (the burst and one), -Remaining,
//     -Reset (seconds until the bucket is full, rounded up) and, on a 429,
//     Retry-After (rounded up to a whole second).
//   - didip/tollbooth v7: x/time/rate's token bucket; RateLimit-Limit (the
//     rate, rounded), RateLimit-Remaining (tokens left) and RateLimit-Reset
//     of 1 on every answer, whatever the bucket holds; a 429 with no
//     Retry-After.
//
// Each client gets limiters of its own. Reported per route against the
// client with no handling; a request sent while a Retry-After ran fails
// the test, and accepting fewer than that client does only with
// HEED_STRICT_TARGETS=1.
func TestThirdPartyGoLimitersVirtual(t *testing.T) {
	for _, lim := range []struct {
		name, section, about string
		routes               []tpRoute
		mux                  func(ok func(string) http.Handler) http.Handler
	}{
		{
			name:    "throttled/throttled " + moduleVersion("github.com/throttled/throttled/v2"),
			section: "throttled/throttled, virtual time",
			about:   "GCRA (a token bucket kept as a theoretical arrival time); X-RateLimit-Limit (the burst and one), -Remaining, -Reset (seconds until the bucket is full, rounded up); on a 429, Retry-After rounded up to a whole second",
			routes: []tpRoute{
				{name: "/t1/ 10/s burst 5", path: "/t1/", workers: 2},
				{name: "/t2/ 60/min burst 10", path: "/t2/", workers: 2},
				{name: "/t3/ 20/s no burst", path: "/t3/", workers: 2},
			},
			mux: func(ok func(string) http.Handler) http.Handler {
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
			section: "didip/tollbooth, virtual time",
			about:   "x/time/rate's token bucket; RateLimit-Limit (the rate, rounded), RateLimit-Remaining (tokens left), RateLimit-Reset of 1 on every answer; a 429 with no Retry-After",
			routes: []tpRoute{
				{name: "/b1/ 10/s burst 10", path: "/b1/", workers: 2},
				{name: "/b2/ 2.5/s burst 2", path: "/b2/", workers: 2},
			},
			mux: func(ok func(string) http.Handler) http.Handler {
				mux := http.NewServeMux()
				bucket := func(rate float64, route string) {
					lmt := tollbooth.NewLimiter(rate, &limiter.ExpirableOptions{DefaultExpirationTTL: time.Hour})
					lmt.SetIPLookups([]string{"RemoteAddr"})
					mux.Handle(route, tollbooth.LimitHandler(lmt, ok(route)))
				}
				bucket(10, "/b1/")
				bucket(2.5, "/b2/")
				return mux
			},
		},
	} {
		t.Run(lim.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				modernClock()
				var mu sync.Mutex
				accepted := map[string]map[string]int{} // client, route
				ok := func(route string) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						mu.Lock()
						c := r.Header.Get("X-Client")
						if accepted[c] == nil {
							accepted[c] = map[string]int{}
						}
						accepted[c][route]++
						mu.Unlock()
						w.Write([]byte("ok"))
					})
				}
				routes := tpFilter(lim.routes)
				wires := runTPOver(t, *tpVirtualFor, func() http.RoundTripper {
					return handlerTransport{h: lim.mux(ok), latency: time.Millisecond}
				}, "http://limiter.test", routes)
				mu.Lock()
				for client, w := range wires {
					for path, c := range w.routes {
						c.accepted = accepted[client][path]
					}
				}
				mu.Unlock()
				table := tpReport(t, lim.name+", virtual time", *tpVirtualFor, routes, wires, true)
				tpWrite(t, lim.section, lim.name+": "+lim.about+". Each client has limiters of its own; in virtual time. *accepted*: the handler's own count.", table)
			})
		})
	}
}
