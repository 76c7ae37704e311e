package heed_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

// The hot paths stay cheap: a memory-store admission and release allocate
// nothing, and the Transport adds at most a few allocations per request.
func TestHotPathAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage counters and the race detector change allocation counts")
	}
	s := memstore.New()
	a := &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "global"},
		{Key: "https://acme.atlassian.net", Limit: 1 << 20},
		{Key: "https://acme.atlassian.net GET /rest/api/3/issue/{id}", Rate: 1e12, Burst: 1e12},
	}}
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		d, _ := s.Admit(ctx, a)
		_ = s.Release(ctx, a, d.Lease)
	}); n != 0 {
		t.Errorf("MemoryStore Admit+Release allocates %v times, want 0", n)
	}

	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}
	base := roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
	for _, conc := range []int{-1, heed.DefaultConcurrency} { // no cap, and a cap with its lease
		tr := &heed.Transport{Base: base, Concurrency: conc, Profile: &profile.Profile{Rate: func(string) float64 { return 1e12 }}}
		req, _ := http.NewRequest(http.MethodGet, "https://acme.atlassian.net/rest/api/3/issue/PROJ-1", nil)
		if n := testing.AllocsPerRun(1000, func() { _, _ = tr.RoundTrip(req) }); n > 3 {
			t.Errorf("Transport{Concurrency: %d}.RoundTrip allocates %v times per request, want at most 3", conc, n)
		}
	}
}
