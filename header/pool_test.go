package header

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// A parser is recycled between ParseInto calls without clearing its
// arrays: what one response's parse left there must never reach another's.
// Each response parses the same after any other as it does first.
func TestParserReuseLeavesNothingBehind(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	samples := []struct {
		name string
		h    http.Header
		body []byte
	}{
		{"jira", jiraResponse, nil},
		{"github", githubResponse, githubBody},
		{"kong", hdr("X-RateLimit-Limit-Second: 5", "X-RateLimit-Remaining-Second: 0", "X-RateLimit-Limit-Hour: 1000", "X-RateLimit-Remaining-Hour: 900"), nil},
		{"zendesk", hdr("Zendesk-RateLimit-Tickets-Index: total=100; remaining=0; resets=10"), nil},
		{"anthropic-unified", hdr("Anthropic-Ratelimit-Unified-5h-Status: rejected", "Anthropic-Ratelimit-Unified-5h-Reset: 1796212800"), nil},
		{"ietf", hdr(`RateLimit-Policy: "burst";q=100;w=60`, `RateLimit: "burst";r=0;t=30`), nil},
		{"none", hdr("Content-Type: application/json"), nil},
	}
	first := make([]Observation, len(samples))
	for i, s := range samples {
		ParseInto(&first[i], http.StatusTooManyRequests, s.h, s.body, now)
	}
	// Every sample after every other: from the pool, and on one Parser.
	var ps Parser
	for _, before := range samples {
		for i, s := range samples {
			var o, scratch Observation
			ParseInto(&scratch, http.StatusTooManyRequests, before.h, before.body, now)
			ParseInto(&o, http.StatusTooManyRequests, s.h, s.body, now)
			if !reflect.DeepEqual(o, first[i]) {
				t.Errorf("%s after %s:\n got %+v\nwant %+v", s.name, before.name, o, first[i])
			}
			ps.ParseInto(&scratch, http.StatusTooManyRequests, before.h, before.body, now)
			ps.ParseInto(&o, http.StatusTooManyRequests, s.h, s.body, now)
			if !reflect.DeepEqual(o, first[i]) {
				t.Errorf("%s after %s on one Parser:\n got %+v\nwant %+v", s.name, before.name, o, first[i])
			}
		}
	}
}
