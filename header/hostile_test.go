package header

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHostileSizes checks that responses built to be expensive stay cheap
// and bounded: a parse of any of them takes about a millisecond; the bound
// asserted is a thousand times that, so that a loaded machine never fails it.
func TestHostileSizes(t *testing.T) {
	mib := strings.Repeat("9", 1<<20)
	var policies, limits strings.Builder
	for i := range 10000 {
		if i > 0 {
			policies.WriteString(", ")
			limits.WriteString(", ")
		}
		fmt.Fprintf(&policies, `"p%d";q=%d;w=60`, i, i)
		fmt.Fprintf(&limits, `"p%d";r=%d;t=1`, i, i)
	}
	manyKeys := http.Header{}
	for i := range 10000 {
		manyKeys[fmt.Sprintf("X-Junk-%d", i)] = []string{"1"}
	}
	manyKeys["X-Ratelimit-Remaining"] = []string{"0"}
	manyLines := http.Header{"Ratelimit": make([]string, 10000)}
	for i := range manyLines["Ratelimit"] {
		manyLines["Ratelimit"][i] = fmt.Sprintf(`"p%d";r=1`, i)
	}
	tests := []struct {
		name string
		h    http.Header
		body []byte
	}{
		{name: "1 MiB Retry-After", h: http.Header{"Retry-After": {mib}}},
		{name: "1 MiB of every field", h: http.Header{
			"Ratelimit": {mib}, "Ratelimit-Policy": {mib}, "Ratelimit-Limit": {mib}, "X-Ratelimit-Limit": {mib},
			"X-Ratelimit-Remaining": {mib}, "X-Ratelimit-Reset": {mib}, "Sforce-Limit-Info": {mib},
			"Zendesk-Ratelimit-X": {mib}, "X-Shopify-Shop-Api-Call-Limit": {mib},
			"Ratelimit-Partition": {mib}, "Anthropic-Ratelimit-Unified-5h-Reset": {mib}, "Retry-After-Ms": {mib},
			"X-App-Limit-24hour-Limit": {mib}, "X-Ratelimit-Reset-Ms": {mib},
		}},
		{name: "1 MiB of partitions", h: http.Header{"Ratelimit-Partition": {strings.Repeat(`"p";a,`, 1<<17)}, "Ratelimit": {limits.String()}}},
		{name: "1 MiB of separators", h: http.Header{
			"Ratelimit": {strings.Repeat(",", 1<<20)}, "Sforce-Limit-Info": {strings.Repeat(";", 1<<20)},
			"Zendesk-Ratelimit-X": {strings.Repeat(";x", 1<<19)},
		}},
		{name: "10,000 policies", h: http.Header{"Ratelimit-Policy": {policies.String()}, "Ratelimit": {limits.String()}}},
		{name: "10,000 lines", h: manyLines},
		{name: "10,000 keys", h: manyKeys},
		{name: "1 MiB body", h: http.Header{}, body: []byte(`{"errors":[{"type":"RATE_LIMITED"}],"x":"` + mib + `"}`)},
		{name: "deeply nested rateLimit", h: http.Header{}, body: []byte(`{"rateLimit":` + strings.Repeat("[", 1<<20))},
		{name: "deeply nested cost", h: http.Header{}, body: []byte(`{"cost":` + strings.Repeat(`{"a":`, 1<<16) + `"throttleStatus"`)},
		{name: "many problem markers", h: http.Header{}, body: []byte(strings.Repeat(`{"type":"http-problem-types#quota-exceeded"}`, 1<<12))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			o := Parse(429, tc.h, tc.body, now)
			if d := time.Since(start); d > time.Second {
				t.Errorf("Parse took %v, want well under a second", d)
			}
			t.Logf("%v: %d limits, %d warnings, first warning %.120q", time.Since(start), len(o.Limits), len(o.Warnings), append(o.Warnings, "")[0])
			if len(o.Limits) > MaxLimits {
				t.Errorf("len(Limits) = %d, want at most %d", len(o.Limits), MaxLimits)
			}
			if len(o.Warnings) > maxWarnings+1 {
				t.Errorf("len(Warnings) = %d, want at most %d", len(o.Warnings), maxWarnings+1)
			}
			for _, w := range o.Warnings {
				if len(w) > 300 {
					t.Errorf("a warning is %d bytes long, want it short: %.100s", len(w), w)
				}
			}
			if o.RetryAfter < 0 || o.RetryAfter > MaxWait {
				t.Errorf("RetryAfter = %v, want within [0, MaxWait]", o.RetryAfter)
			}
		})
	}
}
