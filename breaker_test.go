package heed_test

import (
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/breaker"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// With a breaker, a tenant whose server keeps failing (5xx, reset
// connections) is refused at once with breaker.ErrOpen until the pause
// ends; a probe that succeeds closes it again. Other tenants go on.
func TestBreakerOpensOnFailuresNotOnThrottles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := true
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			switch {
			case strings.Contains(req.URL.Host, "healthy"):
				return ok()
			case !failing:
				return ok()
			case n%2 == 0:
				return heedtest.Response{Status: 500}
			default:
				return heedtest.Response{Err: syscall.ECONNRESET}
			}
		}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), Breaker: &breaker.Settings{Failures: 3, OpenFor: 10 * time.Second}}
		url := "https://acme.atlassian.net/rest/api/3/project"
		for range 3 {
			_, _ = send(t.Context(), tr, http.MethodGet, url, "")
		}
		sentBefore := s.Count()
		_, err := send(t.Context(), tr, http.MethodGet, url, "")
		var oe *breaker.OpenError
		if !errors.As(err, &oe) || !errors.Is(err, breaker.ErrOpen) || errors.Is(err, heed.ErrLimited) {
			t.Fatalf("after 3 failures: err = %v, want a breaker.OpenError, not a rate limit", err)
		}
		if s.Count() != sentBefore {
			t.Errorf("an open breaker let a request through")
		}
		if _, err := send(t.Context(), tr, http.MethodGet, "https://healthy.atlassian.net/rest/api/3/project", ""); err != nil {
			t.Errorf("another tenant: %v, want it unaffected", err)
		}
		failing = false
		time.Sleep(10 * time.Second)
		for i := range 3 {
			if _, err := send(t.Context(), tr, http.MethodGet, url, ""); err != nil {
				t.Fatalf("request %d after the pause: %v, want the probe to close the breaker", i, err)
			}
		}
	})
}

// 429s, and 503s that carry a wait, are the server enforcing its limits:
// they never open the breaker.
func TestBreakerIgnoresThrottles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if n%2 == 0 {
				return heedtest.Response{Status: 503, Header: heedtest.Headers("Retry-After", "1")}
			}
			return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "1", "RateLimit-Reason", "jira-burst-based")}
		}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Breaker: &breaker.Settings{Failures: 2}}
		for i := range 10 {
			if _, err := send(t.Context(), tr, http.MethodGet, "https://acme.atlassian.net/rest/api/3/search", ""); err != nil {
				t.Fatalf("request %d: %v, want throttles returned, never a breaker refusal", i, err)
			}
		}
	})
}

// A request refused by the breaker has its body closed, once.
func TestBreakerRefusalClosesBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}
		tr := &heed.Transport{Base: s, Breaker: &breaker.Settings{Failures: 1}}
		_, _ = send(t.Context(), tr, http.MethodGet, "https://api.test/x", "")
		body := &countingBody{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequest(http.MethodPut, "https://api.test/x", body)
		if _, err := tr.RoundTrip(req); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("err = %v, want breaker.ErrOpen", err)
		}
		if body.closes.Load() != 1 {
			t.Errorf("body closed %d times, want once", body.closes.Load())
		}
	})
}
