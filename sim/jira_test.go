package sim_test

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/sim"
)

const site = "https://acme.atlassian.net"

func TestJiraBurstAdmitsCapacityThen429(t *testing.T) {
	tests := []struct {
		name     string
		scale    float64
		method   string
		path     string // %d is replaced by a distinct number per request
		capacity int
	}{
		{"GET", 0, "GET", "/rest/api/3/issue/ABC-%d", 100},
		{"POST", 0, "POST", "/rest/api/3/search/jql?n=%d", 100},
		{"PUT", 0, "PUT", "/rest/api/3/issue/ABC-%d", 50},
		{"DELETE", 0, "DELETE", "/rest/api/3/issue/%d000", 50},
		{"PATCH", 0, "PATCH", "/rest/api/3/issue/XY_2-%d", 50},
		{"GET scaled", 0.1, "GET", "/rest/api/3/issue/%d00", 10},
		{"PUT scaled", 0.1, "PUT", "/rest/api/3/issue/ABC-%d", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := sim.New(sim.Config{Scale: tc.scale})
				c := newClient(t, s)
				for i := range tc.capacity {
					if r := c.do(tc.method, site+fmt.Sprintf(tc.path, i+1), ""); r.status != 200 {
						t.Fatalf("request %d: status %d, want 200", i+1, r.status)
					}
				}
				r := c.do(tc.method, site+fmt.Sprintf(tc.path, 999999), "")
				if r.status != 429 {
					t.Fatalf("request %d: status %d, want 429", tc.capacity+1, r.status)
				}
				want := map[string]string{
					"Retry-After":       "1",
					"Ratelimit-Reason":  sim.JiraBurst,
					"X-Ratelimit-Reset": "2000-01-01T00:00:01Z", // synctest's epoch plus 1 s
				}
				for k, v := range want {
					if got := r.header.Get(k); got != v {
						t.Errorf("%s = %q, want %q", k, got, v)
					}
				}
				if got := r.header.Get("RateLimit"); !strings.Contains(got, `"jira-burst-based";r=0;t=1`) {
					t.Errorf("RateLimit = %q, want r=0", got)
				}
				// Other endpoints, methods and tenants have their own buckets.
				for _, other := range []string{site + "/rest/api/3/project", "https://other.atlassian.net" + fmt.Sprintf(tc.path, 1)} {
					if r := c.do("GET", other, ""); r.status != 200 {
						t.Errorf("GET %s: status %d, want 200", other, r.status)
					}
				}
				truth := s.Truth()
				if truth.Accepted != tc.capacity+2 || truth.Rejected != 1 || truth.Reasons[sim.JiraBurst] != 1 {
					t.Errorf("Truth: accepted %d rejected %d reasons %v, want %d, 1, burst 1",
						truth.Accepted, truth.Rejected, truth.Reasons, tc.capacity+2)
				}
			})
		})
	}
}

func TestJiraBurstRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{})
		c := newClient(t, s)
		url := site + "/rest/api/3/issue/ABC-1"
		if got := c.repeat(101, "GET", url, ""); got[200] != 100 || got[429] != 1 {
			t.Fatalf("first 101: %v, want 100 accepted and 1 rejected", got)
		}
		time.Sleep(10 * time.Millisecond) // one token at 100/s
		if got := c.repeat(2, "GET", url, ""); got[200] != 1 || got[429] != 1 {
			t.Errorf("after 10ms: %v, want 1 accepted then 1 rejected", got)
		}
		time.Sleep(250 * time.Millisecond)
		if got := c.repeat(26, "GET", url, ""); got[200] != 25 || got[429] != 1 {
			t.Errorf("after 250ms: %v, want 25 accepted then 1 rejected", got)
		}
		time.Sleep(5 * time.Second) // never more than the capacity
		if got := c.repeat(101, "GET", url, ""); got[200] != 100 || got[429] != 1 {
			t.Errorf("after 5s: %v, want 100 accepted then 1 rejected", got)
		}
	})
}

func TestJiraPerIssueWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{})
		c := newClient(t, s)
		issue := site + "/rest/api/3/issue/ABC-1"
		for w := range 5 { // 20 per 2 s, five windows: 100 writes by 8 s
			n := 0
			for i := range 21 {
				path := issue
				if i%2 == 1 {
					path += "/comment" // a write to the same issue
				}
				method := []string{"PUT", "POST"}[i%2]
				r := c.do(method, path, fmt.Sprintf(`{"n":%d,"w":%d}`, i, w))
				if r.status == 200 {
					n++
					continue
				}
				if got := r.header.Get("RateLimit-Reason"); got != sim.JiraPerIssue {
					t.Fatalf("window %d write %d: reason %q, want %q", w, i, got, sim.JiraPerIssue)
				}
				want := "2" // until the 2 s window ends
				if w == 4 {
					want = "22" // the 30 s window is used up too, and ends later
				}
				if got := r.header.Get("Retry-After"); got != want {
					t.Errorf("window %d: Retry-After %q, want %s", w, got, want)
				}
			}
			if n != 20 {
				t.Fatalf("window %d: %d writes accepted, want 20", w, n)
			}
			time.Sleep(2 * time.Second)
		}
		// Now at 10 s: the 30 s window is used up until 30 s.
		r := c.do("PUT", issue, `{"late":true}`)
		if r.status != 429 || r.header.Get("RateLimit-Reason") != sim.JiraPerIssue || r.header.Get("Retry-After") != "20" {
			t.Errorf("101st write: %d reason %q Retry-After %q, want 429 %q 20",
				r.status, r.header.Get("RateLimit-Reason"), r.header.Get("Retry-After"), sim.JiraPerIssue)
		}
		// Reads of the issue and writes to another issue are not limited by it.
		if r := c.do("GET", issue, ""); r.status != 200 {
			t.Errorf("GET: status %d, want 200", r.status)
		}
		if r := c.do("PUT", site+"/rest/api/3/issue/ABC-2", `{}`); r.status != 200 {
			t.Errorf("PUT other issue: status %d, want 200", r.status)
		}
		if sc, ok := func() (sim.Scope, bool) {
			tr := s.Truth()
			return tr.Scope(sim.JiraPerIssueLong, "acme.atlassian.net issue ABC-1")
		}(); !ok || sc.Accepted != 100 || sc.Rejected != 2 {
			t.Errorf("Scope(%s) = %+v, %v; want 100 accepted, 2 rejected", sim.JiraPerIssueLong, sc, ok)
		}
	})
}

func TestJiraQuotas(t *testing.T) {
	limits := sim.DefaultLimits(sim.Jira)
	for i := range limits {
		switch limits[i].Name {
		case sim.JiraTenantQuota:
			limits[i].Quota = 5
		case sim.JiraGlobalQuota:
			limits[i].Quota = 8
		}
	}
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Limits: limits})
		c := newClient(t, s)
		a, b := "https://a.atlassian.net/rest/api/3/myself", "https://b.atlassian.net/rest/api/3/myself"
		steps := []struct {
			url, reason, beta string
		}{
			{a, "", `"global-app-quota";t=3600, "tenant-app-quota";t=3600`},
			{a, "", `"global-app-quota";t=3600, "tenant-app-quota";t=3600`},
			{a, "", `"global-app-quota";t=3600, "tenant-app-quota";t=3600`},
			{a, "", `"global-app-quota";t=3600, "tenant-app-quota";r=1;t=3600`},
			{a, "", `"global-app-quota";t=3600, "tenant-app-quota";r=0;t=3600`},
			{a, sim.JiraReasonTenant, `"global-app-quota";t=3600, "tenant-app-quota";r=0;t=3600`},
			{b, "", `"global-app-quota";t=3600, "tenant-app-quota";t=3600`},
			{b, "", `"global-app-quota";r=1;t=3600, "tenant-app-quota";t=3600`},
			{b, "", `"global-app-quota";r=0;t=3600, "tenant-app-quota";t=3600`},
			{b, sim.JiraReasonGlobal, `"global-app-quota";r=0;t=3600, "tenant-app-quota";t=3600`},
		}
		for i, st := range steps {
			r := c.do("GET", st.url, "")
			wantStatus := 200
			if st.reason != "" {
				wantStatus = 429
			}
			if r.status != wantStatus || r.header.Get("RateLimit-Reason") != st.reason {
				t.Errorf("step %d: %d reason %q, want %d %q", i, r.status, r.header.Get("RateLimit-Reason"), wantStatus, st.reason)
			}
			if got := r.header.Get("Beta-RateLimit"); got != st.beta {
				t.Errorf("step %d: Beta-RateLimit = %s, want %s", i, got, st.beta)
			}
			if st.reason != "" && r.header.Get("Retry-After") != "3600" {
				t.Errorf("step %d: Retry-After %q, want 3600", i, r.header.Get("Retry-After"))
			}
		}
		if got, want := s.Truth().Reasons, map[string]int{sim.JiraReasonTenant: 1, sim.JiraReasonGlobal: 1}; !maps.Equal(got, want) {
			t.Errorf("Reasons = %v, want %v", got, want)
		}
		time.Sleep(time.Hour) // the windows reset
		if r := c.do("GET", a, ""); r.status != 200 {
			t.Errorf("after an hour: status %d, want 200", r.status)
		}
	})
}

func TestJiraRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name      string
		n         int // GETs to one endpoint; the header of the last is checked
		rateLimit string
	}{
		{"well within", 1, `"jira-burst-based";t=1`},
		{"21 left", 79, `"jira-burst-based";t=1`},
		{"20 left is low", 80, `"jira-burst-based";r=20;t=1`},
		{"none left", 100, `"jira-burst-based";r=0;t=1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newClient(t, sim.New(sim.Config{}))
				var r result
				for range tc.n {
					r = c.do("GET", site+"/rest/api/3/issue/ABC-1", "")
				}
				want := http.Header{
					"Ratelimit-Policy":      {`"jira-burst-based";q=100;w=1`},
					"Ratelimit":             {tc.rateLimit},
					"Beta-Ratelimit-Policy": {`"global-app-quota";q=65000;w=3600, "tenant-app-quota";q=10000;w=3600`},
					"Beta-Ratelimit":        {`"global-app-quota";t=3600, "tenant-app-quota";t=3600`},
				}
				for k, v := range want {
					if got := r.header.Get(k); got != v[0] {
						t.Errorf("%s = %s, want %s", k, got, v[0])
					}
				}
				for _, k := range []string{"Retry-After", "RateLimit-Reason", "X-RateLimit-Reset"} {
					if v, ok := r.header[http.CanonicalHeaderKey(k)]; ok {
						t.Errorf("%s = %q on a 200, want none", k, v)
					}
				}
			})
		})
	}
}

func TestJiraIssueWritePolicies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, sim.New(sim.Config{}))
		r := c.do("PUT", "https://acme.atlassian.net/t/ignored/rest/api/3/issue/ABC-7", "{}")
		want := `"jira-burst-based";q=50;w=1, "jira-per-issue-on-write";q=20;w=2, "jira-per-issue-on-write-30s";q=100;w=30`
		if got := r.header.Get("RateLimit-Policy"); got != want {
			t.Errorf("RateLimit-Policy = %s, want %s", got, want)
		}
		if got, want := r.body, `{"tenant":"ignored","endpoint":"PUT /rest/api/3/issue/{id}"}`; got != want {
			t.Errorf("body = %s, want %s", got, want)
		}
	})
}
