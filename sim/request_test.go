package sim

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestNewRequest(t *testing.T) {
	tests := []struct {
		name, method, target, body           string
		tenant, path, endpoint, issue, model string
		tokens                               float64
	}{
		{name: "host tenant", method: "GET", target: "https://Acme.atlassian.net/rest/api/3/issue/ABC-123?fields=x",
			tenant: "acme.atlassian.net", path: "/rest/api/3/issue/ABC-123", endpoint: "GET /rest/api/3/issue/{id}"},
		{name: "path tenant", method: "PUT", target: "http://127.0.0.1:8080/t/beta/rest/api/3/issue/10042/comment/7",
			tenant: "beta", path: "/rest/api/3/issue/10042/comment/7", endpoint: "PUT /rest/api/3/issue/{id}/comment/7", issue: "issue 10042"},
		{name: "tenant only", method: "GET", target: "http://h/t/beta",
			tenant: "beta", path: "/", endpoint: "GET /"},
		{name: "short numbers stay", method: "GET", target: "http://h/rest/api/2/project/12",
			tenant: "h", path: "/rest/api/2/project/12", endpoint: "GET /rest/api/2/project/12"},
		{name: "not issue keys", method: "POST", target: "http://h/issue/abc-1/x/A-/B-1x/1A-2",
			tenant: "h", path: "/issue/abc-1/x/A-/B-1x/1A-2", endpoint: "POST /issue/abc-1/x/A-/B-1x/1A-2"},
		{name: "issue write", method: "DELETE", target: "http://h/rest/api/3/issue/P_1-9",
			tenant: "h", path: "/rest/api/3/issue/P_1-9", endpoint: "DELETE /rest/api/3/issue/{id}", issue: "issue P_1-9"},
		{name: "issue read", method: "GET", target: "http://h/rest/api/3/issue/P-9",
			tenant: "h", path: "/rest/api/3/issue/P-9", endpoint: "GET /rest/api/3/issue/{id}"},
		{name: "openai chat", method: "POST", target: "http://h/v1/chat/completions",
			body:   `{"model":"m","messages":[{"content":"abcdefgh"},{"content":[{"type":"text","text":"éé"}]}],"max_tokens":10}`,
			tenant: "h", path: "/v1/chat/completions", endpoint: "POST /v1/chat/completions", model: "m", tokens: 13},
		{name: "openai prompt", method: "POST", target: "http://h/v1/completions",
			body:   `{"prompt":["abcd","e"],"max_completion_tokens":4}`,
			tenant: "h", path: "/v1/completions", endpoint: "POST /v1/completions", model: "default", tokens: 6},
		{name: "not JSON", method: "POST", target: "http://h/v1/x", body: "hello",
			tenant: "h", path: "/v1/x", endpoint: "POST /v1/x", model: "default", tokens: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			q := newRequest(r, []byte(tc.body))
			if q.Tenant != tc.tenant || q.Path != tc.path || q.Endpoint != tc.endpoint {
				t.Errorf("newRequest(%s %s) = %q %q %q, want %q %q %q", tc.method, tc.target,
					q.Tenant, q.Path, q.Endpoint, tc.tenant, tc.path, tc.endpoint)
			}
			if got := jiraIssueWrite(q); got != tc.issue {
				t.Errorf("jiraIssueWrite = %q, want %q", got, tc.issue)
			}
			if tc.model != "" {
				if got, cost := openaiModel(q), q.cost(Tokens); got != tc.model || cost != tc.tokens {
					t.Errorf("openai model, tokens = %q, %v; want %q, %v", got, cost, tc.model, tc.tokens)
				}
			}
		})
	}
}

func TestIdleStateEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{})
		rt := s.RoundTripper()
		send := func(method, target string) {
			r := httptest.NewRequest(method, target, strings.NewReader("{}"))
			r.RequestURI = ""
			resp, err := rt.RoundTrip(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		for i := range 500 {
			send("GET", fmt.Sprintf("http://t%d.test/rest/api/3/project/%d", i, i))
			send("POST", fmt.Sprintf("http://t%d.test/rest/api/3/issue", i))
		}
		n := len(s.states)
		if n < 1000 {
			t.Fatalf("states = %d, want every scope", n)
		}
		time.Sleep(sweepEvery)
		send("GET", "http://t0.test/x")
		// Buckets have refilled and windows not begun are empty; the hourly
		// quotas are still counting.
		s.mu.Lock()
		n, dups, scopes := len(s.states), len(s.dups), len(s.scopes)
		s.mu.Unlock()
		if n != 502 || scopes != 1502 || dups != 500 {
			t.Errorf("after a sweep: %d states, %d scopes, %d write fingerprints; want 502, 1502, 500", n, scopes, dups)
		}
		time.Sleep(time.Hour)
		send("GET", "http://t0.test/x")
		s.mu.Lock()
		n, dups = len(s.states), len(s.dups)
		s.mu.Unlock()
		if n != 3 || dups != 0 {
			t.Errorf("an hour later: %d states, %d fingerprints; want 3, 0", n, dups)
		}
	})
}

func TestBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Limits: []Limit{{Name: "l", Per: PerEndpoint, Quota: 1}}})
		for i := range maxScopes + 10 {
			r := httptest.NewRequest("GET", fmt.Sprintf("http://h/p%d", i), nil)
			r.Header.Set("X-Sim-Client", fmt.Sprint(i%(maxClients+5)))
			s.ServeHTTP(httptest.NewRecorder(), r)
		}
		for range maxSteps + 10 {
			time.Sleep(s.step)
			r := httptest.NewRequest("GET", "http://h/p0", nil)
			r.Header.Set("X-Sim-Client", "0")
			s.ServeHTTP(httptest.NewRecorder(), r)
		}
		tr := s.Truth()
		if len(tr.Scopes) != maxScopes+1 || len(tr.Clients) != maxClients+1 {
			t.Errorf("%d scopes and %d clients, want %d and %d", len(tr.Scopes), len(tr.Clients), maxScopes+1, maxClients+1)
		}
		other, _ := tr.Scope("l", otherLabel)
		if other.Requests != 10 {
			t.Errorf("scope %s: %d requests, want 10", otherLabel, other.Requests)
		}
		c, _ := tr.Client("0")
		if len(c.Series.Accepted) != maxSteps || c.Series.Accepted[maxSteps-1] != 1 ||
			!c.Series.Start.Equal(tr.Now.Add(-(maxSteps-1)*s.step)) {
			t.Errorf("series of %d points from %v, want %d up to now", len(c.Series.Accepted), c.Series.Start, maxSteps)
		}
	})
}
