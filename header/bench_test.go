package header

import (
	"net/http"
	"testing"
)

// jiraResponse is the head of a typical successful Jira Cloud response.
var jiraResponse = hdr(
	"Content-Type: application/json;charset=UTF-8",
	"Date: Sun, 29 Nov 2026 12:00:00 GMT",
	"Server: AtlassianEdge",
	"Vary: Accept-Encoding",
	"Cache-Control: no-cache, no-store, no-transform",
	"X-Arequestid: 0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
	"X-Aaccountid: 5b10ac8d82e05b22cc7d4ef5",
	"Timing-Allow-Origin: *",
	"Strict-Transport-Security: max-age=63072000; includeSubDomains; preload",
	`RateLimit-Policy: "jira-burst-based";q=100;w=1`,
	`RateLimit: "jira-burst-based";r=90;t=1`,
	`Beta-RateLimit-Policy: "global-app-quota";q=65000;w=3600`,
	`Beta-RateLimit: "global-app-quota";r=11000;t=600`,
	"X-RateLimit-Limit: 100",
	"X-RateLimit-Remaining: 90",
	"X-RateLimit-Reset: 2026-11-29T12:00:01Z",
)

// githubResponse is the head of a typical successful GitHub REST response.
var githubResponse = hdr(
	"Content-Type: application/json; charset=utf-8",
	"Date: Sun, 29 Nov 2026 12:00:00 GMT",
	"Server: github.com",
	"Cache-Control: private, max-age=60, s-maxage=60",
	"Vary: Accept, Authorization, Cookie, X-GitHub-OTP",
	`Etag: W/"a8e4c8d2f3b1e5c7"`,
	"Last-Modified: Sat, 28 Nov 2026 09:00:00 GMT",
	"X-Oauth-Scopes: repo",
	"X-Accepted-Oauth-Scopes: repo",
	"X-Github-Media-Type: github.v3; format=json",
	"X-Github-Api-Version-Selected: 2022-11-28",
	"X-Ratelimit-Limit: 5000",
	"X-Ratelimit-Remaining: 4987",
	"X-Ratelimit-Reset: 1795957200",
	"X-Ratelimit-Used: 13",
	"X-Ratelimit-Resource: core",
	"Access-Control-Expose-Headers: ETag, Link, Location, Retry-After, X-GitHub-OTP, X-RateLimit-Limit",
	"Access-Control-Allow-Origin: *",
	"Strict-Transport-Security: max-age=31536000; includeSubdomains; preload",
	"X-Github-Request-Id: C2A4:3B2F:1A2B3C:1B2C3D:6750A1B2",
)

var githubBody = []byte(`{"login":"octocat","id":1,"node_id":"MDQ6VXNlcjE=","type":"User","site_admin":false,` +
	`"name":"monalisa octocat","company":"GitHub","blog":"https://github.com/blog","location":"San Francisco",` +
	`"public_repos":2,"public_gists":1,"followers":20,"following":0,"created_at":"2008-01-14T04:33:35Z"}`)

func BenchmarkParseJira(b *testing.B) {
	var o Observation
	b.ReportAllocs()
	for b.Loop() {
		ParseInto(&o, http.StatusOK, jiraResponse, nil, now)
	}
}

func BenchmarkParseGitHub(b *testing.B) {
	var o Observation
	b.ReportAllocs()
	for b.Loop() {
		ParseInto(&o, http.StatusOK, githubResponse, githubBody, now)
	}
}

// TestParseIntoAllocs holds the hot path to its promise: a typical Jira or
// GitHub response parsed into a reused Observation allocates nothing.
func TestParseIntoAllocs(t *testing.T) {
	var o Observation
	for _, tc := range []struct {
		name string
		h    http.Header
		body []byte
	}{
		{"jira", jiraResponse, nil},
		{"github", githubResponse, githubBody},
	} {
		ParseInto(&o, http.StatusOK, tc.h, tc.body, now) // grow o's slices
		if n := testing.AllocsPerRun(100, func() { ParseInto(&o, http.StatusOK, tc.h, tc.body, now) }); n != 0 {
			t.Errorf("ParseInto(%s) allocates %v times, want 0", tc.name, n)
		}
	}
}
