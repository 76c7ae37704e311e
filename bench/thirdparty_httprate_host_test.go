package bench

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-chi/httprate"
)

// TestThirdPartyHTTPRateWholeHostVirtual runs go-chi/httprate as its README
// first shows it, one limiter for every route of a host
// (httprate.LimitByIP(100, time.Minute) around the router; keyed here on
// X-Client, as the other httprate tests are): three routes share a sliding
// minute of 100, and their headers do not say so. Five minutes of virtual
// time, two workers a route. Each route spreads what is left of the minute
// as if it were its own, and slows as the others spend it; a refusal costs
// a Retry-After of the whole window.
func TestThirdPartyHTTPRateWholeHostVirtual(t *testing.T) {
	routes := tpFilter([]tpRoute{
		{name: "/m1/ 100/min, one limiter for the host", path: "/m1/", workers: 2},
		{name: "/m2/ 100/min, one limiter for the host", path: "/m2/", workers: 2},
		{name: "/m3/ 100/min, one limiter for the host", path: "/m3/", workers: 2},
	})
	d := 5 * time.Minute
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		h := newCountingHost(func(ok func(string) http.Handler) http.Handler {
			mux := http.NewServeMux()
			for _, r := range []string{"/m1/", "/m2/", "/m3/"} {
				mux.Handle(r, ok(r))
			}
			byClient := func(r *http.Request) (string, error) { return r.Header.Get("X-Client"), nil }
			return httprate.LimitBy(100, time.Minute, byClient)(mux)
		})
		wires := runTPOver(t, d, func() http.RoundTripper { return handlerTransport{h: h, latency: time.Millisecond} }, "http://httprate.test", routes)
		h.count(wires)
		tpReport(t, "go-chi/httprate "+httprateVersion()+", one limiter for the host, virtual time", d, routes, wires, true)
		// What heed gets now: 486-487 of none's 500 in 10 runs, none
		// refused (session 17: 0.71-0.91, a route at times held a whole
		// minute, its refusals each a Retry-After of the window). The
		// floor keeps it from falling back: a refusal costs the routes
		// that share the counter a whole minute, a fifth of this run.
		var acc, lim, none int
		for _, r := range routes {
			acc += wires["heed"].routes[r.path].accepted
			none += wires["none"].routes[r.path].accepted
			lim += wires["heed"].routes[r.path].limited
		}
		if acc < none*9/10 || lim > 2 {
			t.Errorf("heed accepted %d with %d refused, none %d; want at least 0.9 of none's and at most 2 refused", acc, lim, none)
		}
	})
}
