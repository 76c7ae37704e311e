package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

// stub answers every request with a fixed 200, with no I/O, so that a
// benchmark over it measures only the wrapper's own cost.
type stub struct{}

func (stub) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// clients returns the round trippers compared, each wrapping base.
func clients(base http.RoundTripper) []struct {
	name string
	rt   http.RoundTripper
} {
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	rc.HTTPClient = &http.Client{Transport: base}
	return []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", base},
		{"heed", &heed.Transport{Base: base, Concurrency: -1, Profile: &profile.Profile{Rate: func(string) float64 { return 0 }}}},
		{"heed-paced", &heed.Transport{Base: base, Concurrency: -1, Profile: &profile.Profile{Rate: func(string) float64 { return 1e9 }}}},
		// With the Jira profile's default cap on requests in flight per
		// tenant: a lease taken and given back per request.
		{"heed-capped", &heed.Transport{Base: base, Concurrency: heed.DefaultConcurrency, Profile: &profile.Profile{Rate: func(string) float64 { return 0 }}}},
		{"retryablehttp", &retryablehttp.RoundTripper{Client: rc}},
		{"failsafe", failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().Build())},
	}
}

func roundTrip(b *testing.B, rt http.RoundTripper, url string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// BenchmarkOverhead is the cost per request of each wrapper when no limit is
// hit: over a stub (the wrapper alone) and over loopback HTTP (as used).
func BenchmarkOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	loop := &http.Transport{MaxIdleConnsPerHost: 64}
	defer loop.CloseIdleConnections()

	for _, under := range []struct {
		name string
		base http.RoundTripper
		url  string
	}{
		{"stub", stub{}, "http://api.test/rest/api/3/issue/PROJ-1"},
		{"loopback", loop, srv.URL + "/rest/api/3/issue/PROJ-1"},
	} {
		for _, c := range clients(under.base) {
			b.Run(under.name+"/serial/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					roundTrip(b, c.rt, under.url)
				}
			})
			b.Run(under.name+"/parallel/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						roundTrip(b, c.rt, under.url)
					}
				})
			})
		}
	}
}

// BenchmarkPacingDecision compares heed's pacing decision (one admission
// through the memory store over a request's scopes, and release) with
// x/time/rate's Allow on one limiter.
func BenchmarkPacingDecision(b *testing.B) {
	// The ceiling: one read of the clock, which every decision here makes.
	b.Run("clock/time.Now", func(b *testing.B) {
		b.ReportAllocs()
		var t time.Time
		for b.Loop() {
			t = time.Now()
		}
		_ = t
	})
	b.Run("x-time-rate/Allow", func(b *testing.B) {
		l := rate.NewLimiter(rate.Inf, 1)
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
	b.Run("x-time-rate/Allow-paced", func(b *testing.B) {
		l := rate.NewLimiter(1e12, 1e6)
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
	b.Run("heed/Admit+Release", func(b *testing.B) {
		s, a := memstore.New(), jiraRead()
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			d, _ := s.Admit(ctx, a)
			_ = s.Release(ctx, a, d.Lease)
		}
	})
	// As a Transport asks: with the clock it read when the request began
	// (one read per decision, as Allow makes).
	b.Run("heed/Admit+Release-one-clock-read", func(b *testing.B) {
		s, a := memstore.New(), jiraRead()
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			a.Now = time.Now()
			d, _ := s.Admit(ctx, a)
			_ = s.Release(ctx, a, d.Lease)
		}
	})
}

// jiraRead is the admission of a Jira read: the global scope, the tenant
// with its concurrency cap, and the endpoint, paced at a rate never reached.
func jiraRead() *store.Admission {
	return &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "global"},
		{Key: "tenant https://acme.atlassian.net", Limit: 8},
		{Key: "endpoint https://acme.atlassian.net GET /rest/api/3/issue/{id}", Rate: 1e12, Burst: 1e6},
	}}
}

var _ = strings.NewReader
var _ = time.Second
