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
		// What heed gets now (session 17: 0.71-0.91 of none's 500, a route
		// at times held a whole minute, its refusals each a Retry-After of
		// the window) is short of issue 10's targets; the floor keeps it
		// from falling further, and the refusals within reason.
		var acc, lim, none int
		for _, r := range routes {
			acc += wires["heed"].routes[r.path].accepted
			none += wires["none"].routes[r.path].accepted
			lim += wires["heed"].routes[r.path].limited
		}
		if acc < none*6/10 || lim > 20 {
			t.Errorf("heed accepted %d with %d refused, none %d; want at least 0.6 of none's and at most 20 refused", acc, lim, none)
		}
	})
}
