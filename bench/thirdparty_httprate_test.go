package bench

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-chi/httprate"
)

// tpOffset starts httprate's limiters, when set, that fraction of a second
// into one: their windows start there, so each phase can be measured.
var tpOffset = flag.Float64("tp.offset", -1, "TestThirdPartyHTTPRate: start the limiters this fraction of a second into one (their windows start there), not at once")

// TestThirdPartyHTTPRate runs heed against go-chi/httprate, a widely used
// Go middleware (a sliding window counter, as Cloudflare describes it),
// on a real net/http server on loopback: X-RateLimit-Limit, -Remaining and
// -Reset (epoch seconds, the end of the current aligned window) on every
// response, Retry-After on a 429. Each route has its own limiter; /d/ and
// /e/ share one, which their headers do not say. Keyed per client.
func TestThirdPartyHTTPRate(t *testing.T) {
	if *tpOffset >= 0 {
		// httprate's windows start where its limiter starts, a fraction of
		// a second into one: place that fraction, to look at one phase.
		now := time.Now()
		at := now.Truncate(time.Second).Add(time.Duration(*tpOffset * float64(time.Second)))
		if at.Before(now) {
			at = at.Add(time.Second)
		}
		time.Sleep(time.Until(at))
	}
	h := newHTTPRateHost()
	srv := httptest.NewServer(h)
	defer srv.Close()
	routes := tpFilter(httprateRoutes)
	wires := runTP(t, srv.URL, routes)
	h.count(wires)
	table := tpReport(t, "go-chi/httprate "+httprateVersion(), *tpFor, routes, wires, true)
	tpWrite(t, "go-chi/httprate", "go-chi/httprate "+httprateVersion()+" (a Go middleware; sliding window counter, X-RateLimit-* with epoch resets, Retry-After on a 429) on net/http on loopback; one limiter per route, /d/ and /e/ sharing one; keyed per client. *accepted*: the handler's own count.", table)
}

// TestThirdPartyHTTPRateVirtual runs TestThirdPartyHTTPRate's comparison
// in virtual time (testing/synctest): httprate's own handlers, which read
// only time.Now, served in the bubble with a millisecond each way
// (handlerTransport), for every phase of a second its windows can start
// at. Deterministic up to goroutine scheduling, and some seconds of CPU
// for minutes of traffic: a phase the real-time test meets by chance is
// met here every run. As the real-time test, it fails on a request sent
// while a Retry-After ran, and on accepting fewer than the client with no
// handling only with HEED_STRICT_TARGETS=1.
func TestThirdPartyHTTPRateVirtual(t *testing.T) {
	var md strings.Builder
	for _, phase := range []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond} {
		t.Run(fmt.Sprintf("windows %v into a second", phase), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				modernClock()
				time.Sleep(phase)
				h := newHTTPRateHost()
				routes := tpFilter(httprateRoutes)
				wires := runTPOver(t, *tpVirtualFor, func() http.RoundTripper { return handlerTransport{h: h, latency: time.Millisecond} }, "http://httprate.test", routes)
				h.count(wires)
				table := tpReport(t, "go-chi/httprate "+httprateVersion()+", virtual time", *tpVirtualFor, routes, wires, true)
				fmt.Fprintf(&md, "Windows starting %v into a second:\n\n%s\n", phase, table)
			})
		})
	}
	tpWrite(t, "go-chi/httprate, virtual time", "As above, in virtual time, at four phases of a second for its windows.", strings.TrimSuffix(md.String(), "\n"))
}

// handlerTransport serves each request with h in this process, latency
// after the request is sent and again before its answer: in a synctest
// bubble, a server in virtual time.
type handlerTransport struct {
	h       http.Handler
	latency time.Duration
}

func (ht handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sleepCtx(req.Context(), ht.latency) {
		return nil, req.Context().Err()
	}
	rec := httptest.NewRecorder()
	in := req.Clone(req.Context())
	in.RemoteAddr = "127.0.0.1:40000" // as a server sees it
	ht.h.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = req
	if !sleepCtx(req.Context(), ht.latency) {
		return nil, req.Context().Err()
	}
	return resp, nil
}

// httprateRoutes are the routes newHTTPRateHost serves.
var httprateRoutes = []tpRoute{
	{name: "/a/ 10/1s", path: "/a/", workers: 2},
	{name: "/b/ 20/2s", path: "/b/", workers: 2},
	{name: "/c/ 30/10s", path: "/c/", workers: 2},
	{name: "/d/ 20/1s, one limiter with /e/", path: "/d/", workers: 2},
	{name: "/e/ 20/1s, one limiter with /d/", path: "/e/", workers: 2},
}

// newHTTPRateHost serves httprateRoutes, each behind its own httprate
// limiter but /d/ and /e/, which share one (their headers do not say so),
// keyed on X-Client.
func newHTTPRateHost() *countingHost {
	return newCountingHost(func(ok func(string) http.Handler) http.Handler {
		byClient := func(r *http.Request) (string, error) { return r.Header.Get("X-Client"), nil }
		limit := func(n int, per time.Duration) func(http.Handler) http.Handler {
			return httprate.LimitBy(n, per, byClient)
		}
		mux := http.NewServeMux()
		mux.Handle("/a/", limit(10, time.Second)(ok("/a/")))
		mux.Handle("/b/", limit(20, 2*time.Second)(ok("/b/")))
		mux.Handle("/c/", limit(30, 10*time.Second)(ok("/c/")))
		shared := limit(20, time.Second)
		mux.Handle("/d/", shared(ok("/d/")))
		mux.Handle("/e/", shared(ok("/e/")))
		return mux
	})
}

// httprateVersion is the httprate version the tests built with.
func httprateVersion() string { return moduleVersion("github.com/go-chi/httprate") }

// moduleVersion is the version of a module the tests built with.
func moduleVersion(path string) string {
	ver := "?"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				ver = d.Version
			}
		}
	}
	if mod, err := os.ReadFile("go.mod"); ver == "?" && err == nil {
		// A test binary's build info lists no dependencies: the module's
		// requirement says which version it built with.
		for line := range strings.Lines(string(mod)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
				ver = f[1]
			}
		}
	}
	return ver
}
