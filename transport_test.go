package heed_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
)

const jira = "https://acme.atlassian.net"

func get(t *testing.T, rt http.RoundTripper, url string) *http.Response {
	t.Helper()
	return do(t, rt, http.MethodGet, url, "")
}

func do(t *testing.T, rt http.RoundTripper, method, url, body string) *http.Response {
	t.Helper()
	resp, err := send(context.Background(), rt, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

func send(ctx context.Context, rt http.RoundTripper, method, url, body string) (*http.Response, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

func burst429() heedtest.Response {
	return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "1", "RateLimit-Reason", "jira-burst-based")}
}

func ok() heedtest.Response { return heedtest.Response{Status: 200, Body: `{"ok":true}`} }

// gap returns the time between the i-th and j-th requests the script saw.
func gap(s *heedtest.Script, i, j int) time.Duration {
	sent := s.Sent()
	return sent[j].At.Sub(sent[i].At)
}

// Seed 000's own test: waits at least Retry-After after a burst limit, then
// succeeds.
func TestRetryWaitsAtLeastRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira()}
		resp := get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		if resp.StatusCode != 200 || s.Count() != 2 {
			t.Fatalf("status %d after %d sends, want 200 after 2", resp.StatusCode, s.Count())
		}
		if g := gap(s, 0, 1); g < time.Second {
			t.Errorf("retried after %v, want at least 1s", g)
		}
	})
}

func TestRetryAfterDateForm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		at := time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat)
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", at)}, ok()}}
		tr := &heed.Transport{Base: s}
		get(t, tr, jira+"/rest/api/3/myself")
		if g := gap(s, 0, 1); g < 5*time.Second {
			t.Errorf("retried after %v, want at least the 5s the date gives", g)
		}
	})
}

func TestMissingOrZeroRetryAfterWaitsAtLeastOneSecond(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"missing", nil},
		{"zero", heedtest.Headers("Retry-After", "0")},
		{"garbage", heedtest.Headers("Retry-After", "soon")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: tc.h}, ok()}}
				// A Rand that always says 0 makes the backoff itself zero, so
				// only the one-second floor holds the retry back.
				tr := &heed.Transport{Base: s, Rand: rand.New(zeroSource{})}
				get(t, tr, jira+"/rest/api/3/search")
				if g := gap(s, 0, 1); g < time.Second {
					t.Errorf("retried after %v, want at least 1s", g)
				}
			})
		})
	}
}

// A 429 with no Retry-After falls back to exponential backoff.
func TestNoRetryAfterFallsBackToBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429}, {Status: 429}, {Status: 429}, ok()}}
		// A Rand near 1 makes full jitter give its ceiling: 2s, 4s, 8s.
		tr := &heed.Transport{Base: s, Rand: rand.New(maxSource{})}
		get(t, tr, jira+"/rest/api/3/search")
		for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second} {
			if g := gap(s, i, i+1); g < want-time.Millisecond || g > want+time.Second {
				t.Errorf("wait before retry %d = %v, want about %v", i+1, g, want)
			}
		}
	})
}

// Burst limits always say Retry-After: 1; repeated ones must not retry
// every second.
func TestRepeatedBurstLimitsBackOffExponentially(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), burst429(), burst429(), burst429(), ok()}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), Rand: rand.New(maxSource{})}
		get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		var prev time.Duration
		for i := range 4 {
			g := gap(s, i, i+1)
			if g < time.Second || g < prev {
				t.Errorf("wait before retry %d = %v, want at least 1s and at least the previous %v", i+1, g, prev)
			}
			prev = g
		}
		if g := gap(s, 3, 4); g < 16*time.Second-time.Millisecond {
			t.Errorf("fourth burst wait = %v, want the backoff's 16s, not Retry-After's 1s", g)
		}
	})
}

// A 429 with RateLimit-Reason: jira-burst-based doesn't delay requests to
// other endpoints.
func TestBurstLimitBlocksOnlyItsEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if strings.Contains(req.URL.Path, "/search") {
				return burst429()
			}
			return ok()
		}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1}
		start := time.Now()
		get(t, tr, jira+"/rest/api/3/search")
		get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		if d := time.Since(start); d != 0 {
			t.Errorf("other endpoint waited %v after a burst 429, want 0", d)
		}
		// The limited endpoint itself is blocked.
		get(t, tr, jira+"/rest/api/3/search")
		if d := time.Since(start); d < time.Second {
			t.Errorf("limited endpoint resent after %v, want at least 1s", d)
		}
	})
}

// Several concurrent requests that all get the same 429 wait on one shared
// block, and send nothing until it has passed.
func TestConcurrent429sAreOneEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := time.Now()
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if n < 8 {
				time.Sleep(10 * time.Millisecond) // all 8 are in flight together
				return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "3", "RateLimit-Reason", "jira-burst-based")}
			}
			return ok()
		}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira()}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { get(t, tr, jira+"/rest/api/3/issue/PROJ-1") })
		}
		wg.Wait()
		sent := s.Sent()
		if len(sent) != 16 {
			t.Fatalf("sent %d requests, want 8 limited and 8 retries", len(sent))
		}
		for _, r := range sent[8:] {
			if d := r.At.Sub(first); d < 3*time.Second {
				t.Errorf("a retry went %v after the first 429, inside the 3s block", d)
			}
		}
		// The retries go in pacing order, not all at the same instant.
		if sent[8].At.Equal(sent[15].At) {
			t.Errorf("all retries went at %v, want them spread out", sent[8].At.Sub(first))
		}
	})
}

// N concurrent requests meeting one existing block send nothing until it
// passes.
func TestWaitersSendNothingIntoABlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "10", "RateLimit-Reason", "jira-quota-tenant-based")}, ok()}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1}
		start := time.Now()
		get(t, tr, jira+"/rest/api/3/search")
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() { get(t, tr, jira+"/rest/api/3/issue/"+string(rune('A'+i%26))+"X-1") })
		}
		wg.Wait()
		for i, r := range s.Sent()[1:] {
			if d := r.At.Sub(start); d < 10*time.Second {
				t.Errorf("request %d sent %v after the tenant was blocked for 10s", i+1, d)
			}
		}
	})
}

// With a store shared by two tenants' Transports, a burst 429 for one
// doesn't delay the other, but a jira-quota-global-based one does.
func TestSharedStoreAcrossTenants(t *testing.T) {
	for _, tc := range []struct {
		reason    string
		delaysB   bool
		retryWait string
	}{
		{"jira-burst-based", false, "1"},
		{"jira-quota-tenant-based", false, "30"},
		{"jira-quota-global-based", true, "30"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memstore.New()
				limited := heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", tc.retryWait, "RateLimit-Reason", tc.reason)}
				sa := &heedtest.Script{Responses: []heedtest.Response{limited}}
				sb := &heedtest.Script{Responses: []heedtest.Response{ok()}}
				a := &heed.Transport{Base: sa, Store: store, Profile: profile.Jira(), MaxRetries: -1}
				b := &heed.Transport{Base: sb, Store: store, Profile: profile.Jira()}
				start := time.Now()
				get(t, a, "https://a.atlassian.net/rest/api/3/search")
				get(t, b, "https://b.atlassian.net/rest/api/3/search")
				waited := time.Since(start)
				if tc.delaysB && waited < 30*time.Second {
					t.Errorf("tenant b waited %v after a global 429, want at least 30s", waited)
				}
				if !tc.delaysB && waited != 0 {
					t.Errorf("tenant b waited %v after tenant a's %s, want 0", waited, tc.reason)
				}
			})
		})
	}
}

// A 429 with jira-quota-global-based pauses all requests, to every
// endpoint.
func TestGlobalQuotaPausesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{
			{Status: 429, Header: heedtest.Headers("Retry-After", "20", "RateLimit-Reason", "jira-quota-global-based")},
			ok(), ok(),
		}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1}
		start := time.Now()
		get(t, tr, jira+"/rest/api/3/search")
		get(t, tr, jira+"/rest/api/3/project")
		do(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-9", `{}`)
		for i, r := range s.Sent()[1:] {
			if d := r.At.Sub(start); d < 20*time.Second {
				t.Errorf("request %d went %v into a 20s global pause", i+1, d)
			}
		}
	})
}

// A RateLimit header with "global-app-quota";r=0 pauses every tenant's
// Transport that shares the store, but "tenant-app-quota";r=0 only that
// tenant's.
func TestExhaustedQuotaHeaderPausesItsScope(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		delaysB bool
	}{
		{"global-app-quota", true},
		{"tenant-app-quota", false},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memstore.New()
				h := heedtest.Headers("RateLimit", `"`+tc.policy+`";r=0;t=60`)
				sa := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Header: h}, ok()}}
				sb := &heedtest.Script{Responses: []heedtest.Response{ok()}}
				a := &heed.Transport{Base: sa, Store: store, Profile: profile.Jira(), MaxWait: 2 * time.Minute}
				b := &heed.Transport{Base: sb, Store: store, Profile: profile.Jira(), MaxWait: 2 * time.Minute}
				start := time.Now()
				get(t, a, "https://a.atlassian.net/rest/api/3/search")
				get(t, b, "https://b.atlassian.net/rest/api/3/project")
				waited := time.Since(start)
				if tc.delaysB && waited < 60*time.Second {
					t.Errorf("tenant b waited %v after global r=0 with t=60, want at least 60s", waited)
				}
				if !tc.delaysB && waited != 0 {
					t.Errorf("tenant b waited %v after tenant a's own quota ran out, want 0", waited)
				}
				// Tenant a itself is paused in both cases.
				start = time.Now()
				get(t, a, "https://a.atlassian.net/rest/api/3/project")
				if d := time.Since(start) + waited; d < 60*time.Second {
					t.Errorf("tenant a resumed after %v, want the 60s reset", d)
				}
			})
		})
	}
}

// Quota pacing spreads what is left: r=10 with t=100 means one request
// every 10s for the tenant.
func TestLowQuotaSpreadsWhatIsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := heedtest.Headers("RateLimit", `"tenant-app-quota";r=10;t=100`)
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Header: h}}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), ClockSkew: -1}
		for range 4 {
			get(t, tr, jira+"/rest/api/3/search")
		}
		for i := 1; i < 3; i++ {
			if g := gap(s, i, i+1); g < 9*time.Second {
				t.Errorf("gap %d = %v, want about t/r = 10s", i, g)
			}
		}
	})
}

// Retries stop after MaxRetries, and the last 429 response is returned.
func TestRetriesStopAfterMaxRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429()}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: 3}
		resp := get(t, tr, jira+"/rest/api/3/search")
		if resp.StatusCode != 429 || s.Count() != 4 {
			t.Errorf("got %d after %d sends, want the last 429 after 1+3 sends", resp.StatusCode, s.Count())
		}
		if err := heed.CheckResponse(resp); !errors.Is(err, heed.ErrLimited) {
			t.Errorf("CheckResponse(429) = %v, want a LimitedError", err)
		}
	})
}

// A 429 whose Retry-After exceeds MaxWait is returned straight away, and
// isn't retried early.
func TestRetryAfterBeyondMaxWaitIsReturnedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "1847", "RateLimit-Reason", "jira-quota-tenant-based")}, ok()}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira()}
		start := time.Now()
		resp := get(t, tr, jira+"/rest/api/3/search")
		if resp.StatusCode != 429 || s.Count() != 1 || time.Since(start) != 0 {
			t.Errorf("got %d after %d sends and %v, want the 429 at once", resp.StatusCode, s.Count(), time.Since(start))
		}
		var le *heed.LimitedError
		if err := heed.CheckResponse(resp); !errors.As(err, &le) || le.RetryAfter != 1847*time.Second {
			t.Errorf("CheckResponse = %v, want RetryAfter 1847s", err)
		}
		// The tenant is blocked for the whole wait: a new request fails
		// rather than waiting half an hour.
		_, err := send(context.Background(), tr, http.MethodGet, jira+"/rest/api/3/project", "")
		if !errors.As(err, &le) || le.RetryAfter < 1800*time.Second {
			t.Errorf("next request: err = %v, want a LimitedError of about 1847s", err)
		}
		if s.Count() != 1 {
			t.Errorf("sent %d requests into the block, want none", s.Count()-1)
		}
	})
}

// A 429 for a request that isn't retried (a POST by default, or one whose
// retries are used up) still blocks its scope for other callers, and the
// POST is sent exactly once.
func TestUnretriedRequestStillBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		max    int
	}{
		{"post", http.MethodPost, 0},
		{"retries used up", http.MethodGet, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "5", "RateLimit-Reason", "jira-burst-based")}, ok()}}
				tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: tc.max}
				start := time.Now()
				resp := do(t, tr, tc.method, jira+"/rest/api/3/search", `{"jql":"x"}`)
				if resp.StatusCode != 429 || s.Count() != 1 {
					t.Fatalf("got %d after %d sends, want the 429 after one", resp.StatusCode, s.Count())
				}
				do(t, tr, tc.method, jira+"/rest/api/3/search", `{"jql":"y"}`)
				if d := time.Since(start); d < 5*time.Second {
					t.Errorf("next caller sent after %v, want after the 5s block", d)
				}
			})
		})
	}
}

func TestRetriesOnlyWhatIsSafeToRepeat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		header    string
		optIn     bool
		wantSends int
	}{
		{"GET", http.MethodGet, "", false, 2},
		{"HEAD", http.MethodHead, "", false, 2},
		{"OPTIONS", http.MethodOptions, "", false, 2},
		{"PUT", http.MethodPut, "", false, 2},
		{"DELETE", http.MethodDelete, "", false, 2},
		{"POST", http.MethodPost, "", false, 1},
		{"PATCH", http.MethodPatch, "", false, 1},
		{"POST with Idempotency-Key", http.MethodPost, "key-1", false, 2},
		{"POST opted in", http.MethodPost, "", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
				tr := &heed.Transport{Base: s, RetryNonIdempotent: tc.optIn}
				req, _ := http.NewRequest(tc.method, jira+"/rest/api/3/thing", strings.NewReader(`{"a":1}`))
				if tc.header != "" {
					req.Header.Set("Idempotency-Key", tc.header)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if s.Count() != tc.wantSends {
					t.Errorf("%s sent %d times, want %d", tc.name, s.Count(), tc.wantSends)
				}
				for i, r := range s.Sent() {
					if r.Body != `{"a":1}` {
						t.Errorf("send %d carried body %q, want the original", i, r.Body)
					}
				}
			})
		})
	}
}

// Retry 503 only with a wait header.
func TestRetries503OnlyWithAWait(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         http.Header
		wantSends int
	}{
		{"bare 503", nil, 1},
		{"503 with Retry-After", heedtest.Headers("Retry-After", "2"), 2},
		{"503 with X-RateLimit-Reset", heedtest.Headers("X-RateLimit-Reset", "+2s"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if v := tc.h.Get("X-RateLimit-Reset"); v == "+2s" {
					// Jira gives an ISO 8601 instant; make it 2s from the bubble's now.
					tc.h = heedtest.Headers("X-RateLimit-Reset", time.Now().Add(2*time.Second).UTC().Format(time.RFC3339))
				}
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 503, Header: tc.h}, ok()}}
				tr := &heed.Transport{Base: s}
				get(t, tr, jira+"/rest/api/3/search")
				if s.Count() != tc.wantSends {
					t.Errorf("sent %d times, want %d", s.Count(), tc.wantSends)
				}
			})
		})
	}
}

// Concurrency is capped per tenant, for every caller of the Transport.
func TestConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak atomic.Int32
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Second)
			inFlight.Add(-1)
			return ok()
		}}
		tr := &heed.Transport{Base: s, Concurrency: 3, Profile: &profile.Profile{Rate: func(string) float64 { return 0 }}}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() { get(t, tr, jira+"/rest/api/3/e"+string(rune('a'+i))) })
		}
		wg.Wait()
		if peak.Load() != 3 {
			t.Errorf("peak in flight = %d, want the cap of 3", peak.Load())
		}
	})
}

// Requests are paced per endpoint and method to the steady-state rate.
func TestPacingPerEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{ok()}, Repeat: true}
		rate := func(string) float64 { return 10 } // burst 10, then 10/s
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{Rate: rate}}
		start := time.Now()
		for range 30 {
			get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		}
		if d, want := time.Since(start), 2*time.Second; d != want {
			t.Errorf("30 requests at 10/s with a burst of 10 took %v, want %v", d, want)
		}
		// Another endpoint has its own pace.
		start = time.Now()
		get(t, tr, jira+"/rest/api/3/project")
		if d := time.Since(start); d != 0 {
			t.Errorf("another endpoint waited %v, want 0", d)
		}
	})
}

// Writes to one issue go one at a time, 350ms apart; writes to another
// issue are not held back by them.
func TestWritesToOneIssueAreSpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak atomic.Int32
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(100 * time.Millisecond)
			inFlight.Add(-1)
			return ok()
		}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira()}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { do(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-1", `{"fields":{}}`) })
		}
		wg.Wait()
		if peak.Load() != 1 {
			t.Errorf("peak concurrent writes to one issue = %d, want 1", peak.Load())
		}
		sent := s.Sent()
		for i := 1; i < len(sent); i++ {
			if g := sent[i].At.Sub(sent[i-1].At); g < 450*time.Millisecond {
				t.Errorf("writes %d and %d were %v apart, want the 100ms request plus the 350ms gap", i-1, i, g)
			}
		}
		start := time.Now()
		do(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-2", `{}`)
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("a write to another issue took %v, want just its own 100ms", d)
		}
	})
}

// Fail-fast: a request meeting a block gets a LimitedError without
// touching the network, for the Transport or per request.
func TestFailFast(t *testing.T) {
	for _, perRequest := range []bool{false, true} {
		name := map[bool]string{false: "transport", true: "context"}[perRequest]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "7", "RateLimit-Reason", "jira-quota-tenant-based")}}}
				tr := &heed.Transport{Base: s, Profile: profile.Jira(), FailFast: !perRequest, MaxRetries: -1, Rand: rand.New(zeroSource{})}
				ctx := context.Background()
				if perRequest {
					ctx = heed.WithFailFast(ctx)
				}
				if _, err := send(ctx, tr, http.MethodGet, jira+"/rest/api/3/search", ""); err != nil {
					t.Fatal(err)
				}
				body := &countingBody{Reader: strings.NewReader("{}")}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPut, jira+"/rest/api/3/issue/X-1", body)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				var le *heed.LimitedError
				if resp != nil || !errors.As(err, &le) || !errors.Is(err, heed.ErrLimited) {
					t.Fatalf("RoundTrip = %v, %v; want no response and a LimitedError", resp, err)
				}
				if le.RetryAfter != 7*time.Second || le.StatusCode != 0 {
					t.Errorf("LimitedError = %+v, want RetryAfter 7s from a local refusal", le)
				}
				if time.Since(start) != 0 || s.Count() != 1 {
					t.Errorf("fail-fast took %v and sent %d, want 0 and only the first", time.Since(start), s.Count())
				}
				if body.closes.Load() != 1 {
					t.Errorf("refused request's body closed %d times, want once", body.closes.Load())
				}
			})
		})
	}
}

// A cancelled context ends a wait at once and closes the body.
func TestCancelEndsWaitAndClosesBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")}}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1}
		get(t, tr, jira+"/rest/api/3/search")
		ctx, cancel := context.WithCancel(context.Background())
		body := &countingBody{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, jira+"/rest/api/3/issue/X-1", body)
		start := time.Now()
		time.AfterFunc(2*time.Second, cancel)
		resp, err := tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("cancel ended the wait after %v, want at the 2s it happened", d)
		}
		if body.closes.Load() != 1 || s.Count() != 1 {
			t.Errorf("body closed %d times and %d sent; want once and nothing new", body.closes.Load(), s.Count()-1)
		}
	})
}

// A wait that would outlive the context's deadline fails at once.
func TestWaitBeyondDeadlineFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")}}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1}
		get(t, tr, jira+"/rest/api/3/search")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := send(ctx, tr, http.MethodGet, jira+"/rest/api/3/project", "")
		if !errors.Is(err, heed.ErrLimited) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Errorf("err = %v after %v, want a LimitedError for the deadline, at once", err, time.Since(start))
		}
	})
}

// A body that cannot be rewound is not retried, and is sent once.
func TestUnrewindableBodyIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s}
		body := &countingBody{Reader: strings.NewReader("data")}
		req, _ := http.NewRequest(http.MethodPut, jira+"/rest/api/3/issue/X-1", body)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 429 || s.Count() != 1 {
			t.Fatalf("RoundTrip = %v after %d sends, want the 429 after one", err, s.Count())
		}
		resp.Body.Close()
		if body.closes.Load() != 1 {
			t.Errorf("body closed %d times, want once", body.closes.Load())
		}
	})
}

// The caller's request is never written to.
func TestRequestIsNotModified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s}
		req, _ := http.NewRequest(http.MethodPut, jira+"/rest/api/3/issue/X-1?x=1", strings.NewReader("data"))
		req.Header.Set("Authorization", "Bearer t")
		before := req.Header.Clone()
		body, getBody := req.Body, req.GetBody
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(req.Header) != len(before) || req.Header.Get("Authorization") != "Bearer t" || req.Body != body || req.URL.String() != jira+"/rest/api/3/issue/X-1?x=1" || getBody == nil {
			t.Errorf("request was modified: %v %v", req.Header, req.URL)
		}
	})
}

type countingBody struct {
	io.Reader
	closes atomic.Int32
}

func (b *countingBody) Close() error { b.closes.Add(1); return nil }

// zeroSource makes rand.Float64 return 0.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

// maxSource makes rand.Float64 return its largest value, just under 1.
type maxSource struct{}

func (maxSource) Uint64() uint64 { return ^uint64(0) }

// Before a retry, the discarded 429's body is drained (a bounded part) and
// closed, so its connection can be reused; hooks report each step.
func TestRetryDrainsBodyAndReportsEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bodies []*countingBody
		n := 0
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			n++
			status, h := 200, http.Header{}
			if n == 1 {
				status, h = 429, heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "jira-burst-based")
			}
			b := &countingBody{Reader: strings.NewReader(strings.Repeat("x", 1<<20))}
			bodies = append(bodies, b)
			return &http.Response{StatusCode: status, Header: h, Body: b, Request: req}, nil
		})
		var limits, retries, blocks atomic.Int32
		tr := &heed.Transport{Base: base, Profile: profile.Jira(),
			OnLimited: func(e heed.LimitedEvent) { limits.Add(1) },
			OnRetry:   func(e heed.RetryEvent) { retries.Add(1) },
			OnBlock:   func(e heed.BlockEvent) { blocks.Add(1) },
		}
		resp := get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		if resp.StatusCode != 200 || len(bodies) != 2 {
			t.Fatalf("got %d after %d sends", resp.StatusCode, len(bodies))
		}
		if c := bodies[0].closes.Load(); c != 1 {
			t.Errorf("the 429's body was closed %d times before the retry, want once", c)
		}
		if left := bodies[0].Reader.(*strings.Reader).Len(); left == 0 || left == 1<<20 {
			t.Errorf("%d bytes of the 429's 1 MiB body left unread, want a bounded part drained", left)
		}
		if limits.Load() != 1 || retries.Load() != 1 || blocks.Load() != 1 {
			t.Errorf("events: %d limited, %d retried, %d blocked; want 1 each", limits.Load(), retries.Load(), blocks.Load())
		}
	})
}

// A GetBody that fails on a retry ends the request with ErrNotRewindable;
// nothing is sent a second time.
func TestFailingGetBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s}
		req, _ := http.NewRequest(http.MethodPut, jira+"/rest/api/3/issue/X-1", strings.NewReader("data"))
		req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
		resp, err := tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, heed.ErrNotRewindable) || s.Count() != 1 {
			t.Errorf("RoundTrip = %v, %v after %d sends; want ErrNotRewindable after one", resp, err, s.Count())
		}
	})
}
