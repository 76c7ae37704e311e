package heed_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

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
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()}
		start := time.Now()
		get(t, tr, jira+"/rest/api/3/search")
		get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		if d := time.Since(start); d != 0 {
			t.Errorf("other endpoint waited %v after a burst 429, want 0", d)
		}
		// The limited endpoint itself is blocked.
		get(t, tr, jira+"/rest/api/3/search")
		if d := time.Since(start); d != time.Second {
			t.Errorf("limited endpoint resent after %v, want after its 1s block exactly", d)
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
			wg.Go(func() { fetch(t, tr, http.MethodGet, jira+"/rest/api/3/issue/PROJ-1", "") })
		}
		wg.Wait()
		sent := s.Sent()
		if len(sent) != 16 {
			t.Fatalf("sent %d requests, want 8 limited and 8 retries", len(sent))
		}
		// The block starts when the 429s arrive (10ms in) and lasts 3s; each
		// retry waits that plus at most 500ms of retry jitter and 250ms of
		// the jitter that spreads waiters leaving a block.
		for _, r := range sent[8:] {
			if d := r.At.Sub(first); d < 3010*time.Millisecond || d > 3760*time.Millisecond {
				t.Errorf("a retry went %v after the first 429, want within [3.01s, 3.76s]", d)
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
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()}
		start := time.Now()
		get(t, tr, jira+"/rest/api/3/search")
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() { fetch(t, tr, http.MethodGet, jira+"/rest/api/3/issue/"+string(rune('A'+i%26))+"X-1", "") })
		}
		wg.Wait()
		// With no jitter every waiter goes the moment the block ends.
		for i, r := range s.Sent()[1:] {
			if d := r.At.Sub(start); d != 10*time.Second {
				t.Errorf("request %d sent %v after the tenant was blocked for 10s, want at 10s", i+1, d)
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
				a := &heed.Transport{Base: sa, Store: store, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()}
				b := &heed.Transport{Base: sb, Store: store, Profile: profile.Jira(), Rand: zero()}
				start := time.Now()
				get(t, a, "https://a.atlassian.net/rest/api/3/search")
				get(t, b, "https://b.atlassian.net/rest/api/3/search")
				waited := time.Since(start)
				if tc.delaysB && waited != 30*time.Second {
					t.Errorf("tenant b waited %v after a global 429, want its 30s", waited)
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
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()}
		start := time.Now()
		get(t, tr, jira+"/rest/api/3/search")
		get(t, tr, jira+"/rest/api/3/project")
		do(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-9", `{}`)
		for i, r := range s.Sent()[1:] {
			if d := r.At.Sub(start); d != 20*time.Second {
				t.Errorf("request %d went %v after a 20s global pause began, want at its end", i+1, d)
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
				a := &heed.Transport{Base: sa, Store: store, Profile: profile.Jira(), MaxWait: 2 * time.Minute, Rand: zero()}
				b := &heed.Transport{Base: sb, Store: store, Profile: profile.Jira(), MaxWait: 2 * time.Minute, Rand: zero()}
				start := time.Now()
				get(t, a, "https://a.atlassian.net/rest/api/3/search")
				get(t, b, "https://b.atlassian.net/rest/api/3/project")
				waited := time.Since(start)
				if tc.delaysB && waited != 60*time.Second {
					t.Errorf("tenant b waited %v after global r=0 with t=60, want 60s", waited)
				}
				if !tc.delaysB && waited != 0 {
					t.Errorf("tenant b waited %v after tenant a's own quota ran out, want 0", waited)
				}
				// Tenant a itself is paused in both cases.
				start = time.Now()
				get(t, a, "https://a.atlassian.net/rest/api/3/project")
				if d := time.Since(start) + waited; d != 60*time.Second {
					t.Errorf("tenant a resumed after %v, want at the 60s reset", d)
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
		// 10 left over a reset of 100 whole seconds, which is on average
		// half a second sooner: 10 per 99.5s.
		for i := 1; i < 3; i++ {
			if g, want := gap(s, i, i+1), 9950*time.Millisecond; g < want-time.Millisecond || g > want+time.Millisecond {
				t.Errorf("gap %d = %v, want t/r over the rounded-down reset, %v", i, g, want)
			}
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
				tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: tc.max, Rand: zero()}
				start := time.Now()
				resp := do(t, tr, tc.method, jira+"/rest/api/3/search", `{"jql":"x"}`)
				if resp.StatusCode != 429 || s.Count() != 1 {
					t.Fatalf("got %d after %d sends, want the 429 after one", resp.StatusCode, s.Count())
				}
				do(t, tr, tc.method, jira+"/rest/api/3/search", `{"jql":"y"}`)
				if d := time.Since(start); d != 5*time.Second {
					t.Errorf("next caller sent after %v, want at the end of the 5s block", d)
				}
			})
		})
	}
}

// A request blocked on a bound of a window's turn (a reset rounded up to
// whole seconds) asks again halfway through its wait: a nearer bound that
// another caller of the store read meanwhile lets it go at once, where a
// shorter wait the server mandated changes nothing.
func TestBlockedWaiterSeesANearerBound(t *testing.T) {
	const key = "https://acme.atlassian.net GET /rest/api/3/issue/{id}"
	for _, tc := range []struct {
		name  string
		bound bool
		want  time.Duration
	}{
		{"a nearer bound", true, time.Second},
		{"a shorter wait", false, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := memstore.New()
				s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response { return ok() }}
				tr := &heed.Transport{Base: s, Store: st, Profile: profile.Jira(), Rand: zero()}
				update := func(d time.Duration, bound bool) {
					if err := st.Update(t.Context(), &store.Update{Blocks: []store.Block{{Key: key, For: d, Bound: bound}}}); err != nil {
						t.Fatal(err)
					}
				}
				update(2*time.Second, true)
				start := time.Now()
				go func() {
					time.Sleep(500 * time.Millisecond)
					update(500*time.Millisecond, tc.bound)
				}()
				get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
				if d := time.Since(start); d != tc.want {
					t.Errorf("sent after %v, want %v", d, tc.want)
				}
			})
		})
	}
}
