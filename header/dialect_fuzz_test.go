package header

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// seeds returns the values the table rows give the header key, for the
// fuzz targets of one dialect.
func seeds(key string) []string {
	var out []string
	for _, tc := range slices.Concat(parseCases, classCases) {
		for _, line := range tc.header {
			if k, v, ok := strings.Cut(line, ":"); ok && http.CanonicalHeaderKey(k) == key {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}

// FuzzIETF parses the IETF fields of every generation, both spellings of
// draft 12 (r/a, t/w, c) and RateLimit-Partition, on a throttle and on a
// success.
func FuzzIETF(f *testing.F) {
	policies, limits := seeds("Ratelimit-Policy"), seeds("Ratelimit")
	partitions := append(seeds("Ratelimit-Partition"), "")
	for i := range max(len(policies), len(limits)) {
		f.Add(policies[i%len(policies)], limits[i%len(limits)], partitions[i%len(partitions)], i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, policy, limit, partition string, throttled bool) {
		status := http.StatusOK
		if throttled {
			status = http.StatusTooManyRequests
		}
		h := http.Header{"Ratelimit-Policy": {policy}, "Ratelimit": {limit}, "Ratelimit-Partition": {partition}}
		o := Parse(status, h, nil, now)
		checkObservation(t, &o)
		if !throttled && o.HasRetryAfter {
			t.Errorf("a 200 mandates a wait of %v", o.RetryAfter)
		}
	})
}

// FuzzXRateLimit parses the X-RateLimit family with the fields that
// select a provider's reading: GitHub's resource, Zoom's type, the
// millisecond resets, X's 24-hour limits and Linear's endpoint limit.
func FuzzXRateLimit(f *testing.F) {
	resets := slices.Concat(seeds("X-Ratelimit-Reset"), seeds("X-Rate-Limit-Reset"), []string{"Tue Dec 01 2026 08:00:00 GMT+0000 (Coordinated Universal Time)"})
	resources := slices.Concat(seeds("X-Ratelimit-Resource"), seeds("X-Ratelimit-Type"))
	for i, r := range resets {
		f.Add(429+i%2, "60", "0", r, resources[i%len(resources)], "2500")
	}
	f.Fuzz(func(t *testing.T, status int, limit, remaining, reset, kind, ms string) {
		h := http.Header{
			"X-Ratelimit-Limit": {limit}, "X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset},
			"X-Ratelimit-Resource": {kind}, "X-Ratelimit-Type": {kind}, "X-Ratelimit-Reset-Ms": {ms},
			"X-App-Limit-24hour-Limit": {limit}, "X-User-Limit-24hour-Reset": {reset},
			"X-Ratelimit-Endpoint-Requests-Remaining": {remaining}, "X-Ratelimit-Endpoint-Name": {kind},
			"Retry-After-Ms": {ms},
			// Spring Cloud Gateway's bucket, MailerLite's wait, a vendor's
			// own family.
			"X-Ratelimit-Replenish-Rate": {limit}, "X-Ratelimit-Burst-Capacity": {remaining}, "X-Ratelimit-Requested-Tokens": {ms},
			"X-Ratelimit-Retry-After":   {reset},
			"X-Sentry-Rate-Limit-Limit": {limit}, "X-Sentry-Rate-Limit-Remaining": {remaining}, "X-Sentry-Rate-Limit-Reset": {reset},
		}
		o := Parse(status, h, nil, now)
		checkObservation(t, &o)
	})
}

// FuzzVendor parses one vendor field of any name and value, so that the
// fields found by prefix (Anthropic's unified and priority limits,
// Zendesk's endpoint limits, OpenAI's usage-based limits) meet any input.
func FuzzVendor(f *testing.F) {
	for _, tc := range classCases {
		for _, line := range tc.header {
			if k, v, ok := strings.Cut(line, ":"); ok {
				f.Add(tc.status, k, strings.TrimSpace(v))
			}
		}
	}
	f.Fuzz(func(t *testing.T, status int, key, value string) {
		h := http.Header{}
		h.Add(key, value)
		h.Add(key+"-Reset", value)
		h.Add("Anthropic-Ratelimit-Unified-"+key, value)
		o := Parse(status, h, nil, now)
		checkObservation(t, &o)
	})
}

// FuzzBody parses any body with any status: Discord's retry_after,
// GitHub's messages and GraphQL rateLimit, Shopify's cost, the IETF
// problem types, seeded with every body of the tables.
func FuzzBody(f *testing.F) {
	for _, tc := range slices.Concat(parseCases, classCases) {
		if tc.body != "" {
			f.Add(tc.status, []byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		o := Parse(status, http.Header{}, body, now)
		checkObservation(t, &o)
		if status == http.StatusOK && o.HasRetryAfter && !o.Throttled {
			t.Errorf("a 200 mandates a wait")
		}
	})
}
