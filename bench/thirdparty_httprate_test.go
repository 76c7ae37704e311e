package bench

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
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
	byClient := httprate.WithKeyFuncs(func(r *http.Request) (string, error) { return r.Header.Get("X-Client"), nil })
	limit := func(n int, per time.Duration) func(http.Handler) http.Handler {
		return httprate.Limit(n, per, byClient)
	}
	mux := http.NewServeMux()
	mux.Handle("/a/", limit(10, time.Second)(ok("/a/")))
	mux.Handle("/b/", limit(20, 2*time.Second)(ok("/b/")))
	mux.Handle("/c/", limit(30, 10*time.Second)(ok("/c/")))
	shared := limit(20, time.Second)
	mux.Handle("/d/", shared(ok("/d/")))
	mux.Handle("/e/", shared(ok("/e/")))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	routes := tpFilter([]tpRoute{
		{name: "/a/ 10/1s", path: "/a/", workers: 2},
		{name: "/b/ 20/2s", path: "/b/", workers: 2},
		{name: "/c/ 30/10s", path: "/c/", workers: 2},
		{name: "/d/ 20/1s, one limiter with /e/", path: "/d/", workers: 2},
		{name: "/e/ 20/1s, one limiter with /d/", path: "/e/", workers: 2},
	})
	wires := runTP(t, srv.URL, routes)
	mu.Lock()
	for client, w := range wires {
		for path, c := range w.routes {
			c.accepted = accepted[client][path]
		}
	}
	mu.Unlock()
	ver := "?"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/go-chi/httprate" {
				ver = d.Version
			}
		}
	}
	if mod, err := os.ReadFile("go.mod"); ver == "?" && err == nil {
		// A test binary's build info lists no dependencies: the module's
		// requirement says which version it built with.
		for line := range strings.Lines(string(mod)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/go-chi/httprate" {
				ver = f[1]
			}
		}
	}
	table := tpReport(t, "go-chi/httprate "+ver, routes, wires, true)
	tpWrite(t, "go-chi/httprate", "go-chi/httprate "+ver+" (a Go middleware; sliding window counter, X-RateLimit-* with epoch resets, Retry-After on a 429) on net/http on loopback; one limiter per route, /d/ and /e/ sharing one; keyed per client. *accepted*: the handler's own count.", table)
}
