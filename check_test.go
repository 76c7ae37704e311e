package heed_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// CheckResponse names the scope the server limited, in the format of
// LimitedError.Scope, and returns nil for anything that is not a throttle.
func TestCheckResponse(t *testing.T) {
	u, _ := url.Parse("https://acme.atlassian.net/rest/api/3/issue/PROJ-1?fields=x")
	req := &http.Request{Method: http.MethodGet, URL: u}
	for _, tc := range []struct {
		name      string
		status    int
		h         http.Header
		wantScope string
		wantWait  time.Duration
	}{
		{"200", 200, nil, "", 0},
		{"bare 503", 503, nil, "", 0},
		{"bare 429", 429, nil, "https://acme.atlassian.net GET /rest/api/3/issue/{id}", time.Second},
		{"burst", 429, heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "jira-burst-based"), "https://acme.atlassian.net GET /rest/api/3/issue/{id}", 2 * time.Second},
		{"tenant quota", 429, heedtest.Headers("Retry-After", "60", "RateLimit-Reason", "jira-quota-tenant-based"), "https://acme.atlassian.net", time.Minute},
		{"global quota", 429, heedtest.Headers("Retry-After", "60", "RateLimit-Reason", "jira-quota-global-based"), "global", time.Minute},
		{"503 with a wait", 503, heedtest.Headers("Retry-After", "5"), "https://acme.atlassian.net GET /rest/api/3/issue/{id}", 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := heed.CheckResponse(&http.Response{StatusCode: tc.status, Header: tc.h, Request: req})
			if tc.wantScope == "" {
				if err != nil {
					t.Errorf("CheckResponse(%d) = %v, want nil", tc.status, err)
				}
				return
			}
			var le *heed.LimitedError
			if !errors.As(err, &le) || le.Scope != tc.wantScope || le.RetryAfter != tc.wantWait || le.StatusCode != tc.status {
				t.Errorf("CheckResponse(%d) = %v, want scope %q, retry in %v", tc.status, err, tc.wantScope, tc.wantWait)
			}
		})
	}
}
