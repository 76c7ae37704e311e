package heed_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// Shadow mode reports what heed would have done and does none of it: every
// request goes at once, nothing is retried.
func TestShadowReportsAndSendsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{
			{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")},
			ok(), ok(),
		}}
		var waits []heed.WaitEvent
		var retries []heed.RetryEvent
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), Shadow: true, FailFast: true, Rand: zero(),
			OnWait:  func(e heed.WaitEvent) { waits = append(waits, e) },
			OnRetry: func(e heed.RetryEvent) { retries = append(retries, e) },
		}
		start := time.Now()
		if resp := get(t, tr, jira+"/rest/api/3/search"); resp.StatusCode != 429 {
			t.Fatalf("status %d, want the 429 itself, unretried", resp.StatusCode)
		}
		get(t, tr, jira+"/rest/api/3/project")
		get(t, tr, jira+"/rest/api/3/project")
		if d := time.Since(start); d != 0 || s.Count() != 3 {
			t.Errorf("took %v for %d sends, want all 3 at once", d, s.Count())
		}
		if len(retries) != 1 || !retries[0].Shadow || retries[0].Delay != 30*time.Second {
			t.Errorf("retries reported = %+v, want one shadow retry after 30s", retries)
		}
		if len(waits) != 2 {
			t.Fatalf("waits reported = %+v, want 2", waits)
		}
		for _, w := range waits {
			if !w.Shadow || !w.Refused || w.Reason.String() != "blocked" || w.Scope != jira {
				t.Errorf("wait reported = %+v, want a shadow refusal of the blocked tenant (fail-fast)", w)
			}
		}
	})
}

// Waiting says how many requests wait now, and for what.
func TestWaitingCountsRequestsWaitingNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{
			{Status: 429, Header: heedtest.Headers("Retry-After", "10", "RateLimit-Reason", "jira-quota-tenant-based")},
			ok(),
		}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()}
		get(t, tr, jira+"/rest/api/3/search")
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { fetch(t, tr, "GET", jira+"/rest/api/3/project", "") })
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := tr.Waiting()
		if len(got) != 1 || got[0] != (heed.Waiting{Kind: "tenant", Reason: "blocked", N: 3}) {
			t.Errorf("Waiting() = %+v, want 3 blocked on the tenant", got)
		}
		wg.Wait()
		if got := tr.Waiting(); len(got) != 0 {
			t.Errorf("Waiting() after = %+v, want none", got)
		}
	})
}

// OnLimits reports what a response says of its limits.
func TestOnLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := heedtest.Headers("x-ratelimit-limit", "5000", "x-ratelimit-remaining", "4999", "x-ratelimit-reset", "1764580000", "x-ratelimit-resource", "core")
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Header: h}}}
		var got []heed.Limit
		tr := &heed.Transport{Base: s, Profile: profile.GitHub(), OnLimits: func(e heed.LimitsEvent) { got = e.Limits }}
		get(t, tr, "https://api.github.com/user")
		if len(got) != 1 || got[0].Quota != 5000 || got[0].Remaining != 4999 || got[0].Scope != "resource:core" {
			t.Errorf("OnLimits got %+v, want core's 4999 of 5000", got)
		}
	})
}

// A retry the budget cannot pay for is reported as denied.
func TestRetryBudgetDenialIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}
		denied := 0
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{RetryServerErrors: true}, Rand: zero(),
			OnRetry: func(e heed.RetryEvent) {
				if e.Denied {
					denied++
				}
			}}
		for range 20 {
			_, _ = send(context.Background(), tr, http.MethodGet, "https://api.test/v1/x", "")
		}
		// 10 in reserve and 4 earned by 20 requests: 14 retries. The first
		// two requests retry 4 times each, the third twice and is denied
		// its third; each of the 17 after is denied (some after one retry).
		if got, want := s.Count(), 20+14; got != want || denied != 18 {
			t.Errorf("%d sends and %d denials, want %d sends and 18 denials", got, denied, want)
		}
	})
}
