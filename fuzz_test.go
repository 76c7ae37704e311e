package heed_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

func FuzzEndpointKey(f *testing.F) {
	for _, p := range []string{"/rest/api/3/issue/PROJ-1", "/rest/api/3/issue/10001/comment?x=1", "/", "", "//a//", "/v1/files/123e4567-e89b-12d3-a456-426614174000"} {
		f.Add("GET", p)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		k := profile.EndpointKey(method, path)
		if !strings.HasPrefix(k, method+" ") {
			t.Fatalf("EndpointKey(%q, %q) = %q, want it to start with the method", method, path, k)
		}
		if strings.Contains(k, "?") && !strings.Contains(method, "?") {
			t.Fatalf("EndpointKey(%q, %q) = %q kept the query", method, path, k)
		}
		if again := profile.EndpointKey(method, path); again != k {
			t.Fatalf("EndpointKey is not deterministic: %q then %q", k, again)
		}
	})
}

// Whatever headers a server sends, a request through the Transport ends
// without a panic, within its context, and a POST is sent once.
func FuzzTransportHostileHeaders(f *testing.F) {
	f.Add(429, "Retry-After", "1", "RateLimit", `"jira-burst-based";r=0;t=1`)
	f.Add(429, "Retry-After", "99999999999999999999", "RateLimit-Reason", "jira-quota-global-based")
	f.Add(503, "X-RateLimit-Reset", "-5", "RateLimit-Policy", `"x";q=0;w=0`)
	f.Add(200, "RateLimit", `"tenant-app-quota";r=0;t=18446744073709551615`, "Beta-RateLimit", `"global-app-quota";r=1;t=0`)
	f.Add(200, "x-ratelimit-limit-tokens", "1e308", "x-ratelimit-reset-tokens", "9999999h")
	f.Add(200, "X-RateLimit-Limit", "4096", "X-RateLimit-Remaining", "0")
	f.Add(200, "X-RateLimit-Reset", "1796283180", "X-RateLimit-Remaining", "4095")
	f.Fuzz(func(t *testing.T, status int, k1, v1, k2, v2 string) {
		if status < 100 || status > 999 {
			status = 429
		}
		h := http.Header{}
		h.Add(k1, v1)
		h.Add(k2, v2)
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: status, Header: h}}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxWait: 5 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequestWithContext(ctx, method, "https://acme.atlassian.net/rest/api/3/issue/PROJ-1", strings.NewReader("{}"))
			before := s.Count()
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			if err == nil && resp == nil {
				t.Fatal("no response and no error")
			}
			if method == http.MethodPost && s.Count()-before > 1 {
				t.Fatalf("POST sent %d times", s.Count()-before)
			}
		}
	})
}
