package header_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/heedhttp/heed/header"
)

// A Jira Cloud 429: the burst limit of one endpoint was hit.
func ExampleParse() {
	h := http.Header{}
	h.Set("Retry-After", "1")
	h.Set("RateLimit-Reason", "jira-burst-based")
	h.Set("RateLimit-Policy", `"jira-burst-based";q=100;w=1`)
	h.Set("RateLimit", `"jira-burst-based";r=0;t=1`)
	h.Set("Beta-RateLimit", `"global-app-quota";r=11000;t=600`)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	o := header.Parse(http.StatusTooManyRequests, h, nil, now)
	fmt.Println("throttled:", o.Throttled)
	fmt.Println("wait:", o.RetryAfter, "from", o.RetryAfterSource)
	fmt.Println("back off:", o.ReasonScope)
	for _, l := range o.Limits {
		remaining := "unknown"
		if l.Has(header.HasRemaining) {
			remaining = fmt.Sprint(l.Remaining)
		}
		fmt.Printf("%s: %s %s remaining, resets in %v, informational %v\n",
			l.Name, remaining, l.Unit, l.Reset.Sub(now), l.Informational)
	}
	// Output:
	// throttled: true
	// wait: 1s from Retry-After
	// back off: endpoint
	// jira-burst-based: 0 requests remaining, resets in 1s, informational false
	// global-app-quota: 11000 points remaining, resets in 10m0s, informational true
}

// Parsing many responses into one Observation reuses its memory. The last
// request of the window succeeds: its reset is a hint, not a mandated wait.
func ExampleParseInto() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var o header.Observation
	for _, remaining := range []string{"2", "1", "0"} {
		h := http.Header{}
		h.Set("X-RateLimit-Limit", "60")
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", "1795953630") // epoch seconds: 12:00:30 UTC
		header.ParseInto(&o, http.StatusOK, h, nil, now)
		fmt.Println(o.Limits[0].Remaining, o.HasRetryAfter, o.HasHint, o.Hint)
	}
	// Output:
	// 2 false false 0s
	// 1 false false 0s
	// 0 false true 30s
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "1.5", "Sun, 29 Nov 2026 12:01:00 GMT", "soon", "+30"} {
		d, ok := header.ParseRetryAfter(v, now)
		fmt.Printf("%q: %v %v\n", v, d, ok)
	}
	// Output:
	// "120": 2m0s true
	// "1.5": 1.5s true
	// "Sun, 29 Nov 2026 12:01:00 GMT": 1m0s true
	// "soon": 0s false
	// "+30": 0s false
}
