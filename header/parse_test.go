package header

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// now is the instant the table rows are parsed at, unless a row says.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// hdr builds a header from "Name: value" lines, canonicalising names as
// net/http does.
func hdr(lines ...string) http.Header {
	h := http.Header{}
	for _, line := range lines {
		k, v, _ := strings.Cut(line, ":")
		h.Add(k, strings.TrimSpace(v))
	}
	return h
}

// describe renders a limit compactly, "?" for what the server did not
// convey, resets relative to at.
func describe(l Limit, at time.Time) string {
	num := func(k Known, v float64) string {
		if !l.Has(k) {
			return "?"
		}
		return fmt.Sprint(v)
	}
	name, scope, w, reset := l.Name, l.Scope, "?", "?"
	if name == "" {
		name = "-"
	}
	if scope == "" {
		scope = "-"
	}
	if l.Has(HasWindow) {
		w = l.Window.String()
	}
	if l.Has(HasReset) {
		reset = "+" + l.Reset.Sub(at).String()
	}
	s := fmt.Sprintf("%s %s %s q=%s r=%s w=%s reset=%s %s", name, l.Unit, scope,
		num(HasQuota, l.Quota), num(HasRemaining, l.Remaining), w, reset, l.Dialect)
	if l.Has(HasCost) {
		s += fmt.Sprintf(" cost=%v", l.Cost)
	}
	if l.Has(HasUtilization) {
		s += fmt.Sprintf(" used=%v", l.Utilization)
	}
	if l.Partition != "" {
		s += " partition=" + l.Partition
	}
	if l.Informational {
		s += " info"
	}
	return s
}

type parseCase struct {
	name     string
	at       time.Time // zero: now
	status   int
	header   []string
	body     string
	throttle bool
	wait     string // "" for none, else a Duration and its source: "1s Retry-After"
	hint     string // "" for none, else a Duration and its source, as wait
	reason   string // "" or "reason scope"
	limits   []string
	warnings []string
}

// parseCases quote the providers' documented examples. They also seed
// FuzzParse.
var parseCases = []parseCase{
	// @nestjs/throttler's named throttlers (its documentation's short and
	// long), as its guard writes them: the fields suffixed with the name on
	// an accepted answer, Retry-After-<name> alone on a refusal.
	{
		name:   "nestjs throttler named",
		status: 200,
		header: []string{"X-RateLimit-Limit-short: 3", "X-RateLimit-Remaining-short: 2", "X-RateLimit-Reset-short: 1"},
		limits: []string{"short requests - q=3 r=2 w=? reset=+1s x-ratelimit"},
	},
	{
		name:     "nestjs throttler named, refused",
		status:   429,
		header:   []string{"Retry-After-short: 1"},
		throttle: true,
		wait:     "1s Retry-After-Short",
	},
	// rate-limiter-flexible's README headers, on a refusal: a Retry-After
	// to the millisecond takes the place of the reset it rounds.
	{
		name:     "rate-limiter-flexible refusal",
		status:   429,
		header:   []string{"Retry-After: 0.25", "X-RateLimit-Limit: 10", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 1705420801"},
		at:       time.Unix(1705420800, 900_000_000),
		throttle: true,
		wait:     "250ms Retry-After",
		limits:   []string{"- requests - q=10 r=0 w=? reset=+250ms x-ratelimit"},
	},
	// IETF draft-ietf-httpapi-ratelimit-headers.
	{
		name:   "ietf drafts 00-06 separate fields",
		status: 200,
		header: []string{"RateLimit-Limit: 10", "RateLimit-Remaining: 1", "RateLimit-Reset: 7"},
		limits: []string{"- requests - q=10 r=1 w=? reset=+7s ietf-separate"},
	},
	{
		name:   "ietf drafts 03-06 quota policies in RateLimit-Limit",
		status: 200,
		header: []string{"RateLimit-Limit: 10, 10;w=1, 50;w=60", "RateLimit-Remaining: 9", "RateLimit-Reset: 1"},
		limits: []string{
			"- requests - q=10 r=9 w=1s reset=+1s ietf-separate",
			"- requests - q=50 r=? w=1m0s reset=? ietf-separate",
		},
	},
	{
		name:   "ietf drafts 00-02 window parameter",
		status: 200,
		header: []string{`RateLimit-Limit: 100, 100;window=60;burst=1000;comment="sliding window", 5000;window=3600`, "RateLimit-Remaining: 50", "RateLimit-Reset: 30"},
		limits: []string{
			"- requests - q=100 r=50 w=1m0s reset=+30s ietf-separate",
			"- requests - q=5000 r=? w=1h0m0s reset=? ietf-separate",
		},
	},
	{
		name:   "ietf RateLimit-Policy with separate fields",
		status: 200,
		header: []string{"RateLimit-Limit: 5", "RateLimit-Policy: 5;w=60", "RateLimit-Remaining: 0", "RateLimit-Reset: 42"},
		hint:   "42s RateLimit-Reset",
		limits: []string{"- requests - q=5 r=0 w=1m0s reset=+42s ietf-separate"},
	},
	{
		name:   "ietf draft 07 combined field",
		status: 200,
		header: []string{"RateLimit: limit=100, remaining=50, reset=5", "RateLimit-Policy: 100;w=60"},
		limits: []string{"- requests - q=100 r=50 w=1m0s reset=+5s ietf-combined"},
	},
	{
		name:   "ietf draft 08-10 named policy with unit and partition key",
		status: 200,
		header: []string{`RateLimit-Policy: "day";q=5000;w=86400;qu="requests";pk=:cHJvamVjdC0xMjM=:`, `RateLimit: "day";r=100;t=36000`},
		limits: []string{"day requests - q=5000 r=100 w=24h0m0s reset=+10h0m0s ietf-structured"},
	},
	{
		name:   "ietf draft 08 several policies per field",
		status: 200,
		header: []string{`RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400`, `RateLimit: "burst";r=50;t=30, "daily";r=999;t=3600`},
		limits: []string{
			"burst requests - q=100 r=50 w=1m0s reset=+30s ietf-structured",
			"daily requests - q=1000 r=999 w=24h0m0s reset=+1h0m0s ietf-structured",
		},
	},
	{
		name:   "ietf content-bytes unit and unknown parameters ignored",
		status: 200,
		header: []string{`RateLimit-Policy: "upload";q=1048576;w=3600;qu="content-bytes";foo=bar;x=?1`, `RateLimit: "upload";r=1000;t=60;future=12.5`},
		limits: []string{"upload content-bytes - q=1.048576e+06 r=1000 w=1h0m0s reset=+1m0s ietf-structured"},
	},
	{
		name:   "cloudflare",
		status: 200,
		header: []string{`Ratelimit: "default";r=50;t=30`, `Ratelimit-Policy: "burst";q=100;w=60`},
		limits: []string{
			"burst requests - q=100 r=? w=1m0s reset=? ietf-structured",
			"default requests - q=? r=50 w=? reset=+30s ietf-structured",
		},
	},

	// Jira Cloud.
	{
		name:   "jira headers from the guide",
		status: 200,
		header: []string{`RateLimit-Policy: "jira-burst-based";q=100;w=1`, `RateLimit: "jira-burst-based";r=90;t=1`, `Beta-RateLimit: "global-app-quota";r=11000;t=600`},
		limits: []string{
			"jira-burst-based requests endpoint q=100 r=90 w=1s reset=+1s ietf-structured",
			"global-app-quota points global q=? r=11000 w=? reset=+10m0s ietf-structured info",
		},
	},
	{
		// The Fastly API's documented example.
		name:   "fastly",
		status: 200,
		header: []string{"Fastly-RateLimit-Remaining: 999", "Fastly-RateLimit-Reset: 1452032384"},
		at:     time.Unix(1452032384-1800, 0).UTC(),
		limits: []string{"- requests - q=? r=999 w=1h0m0s reset=+30m0s x-ratelimit"},
	},
	{
		// Bucket4j's idiom: the wait in its own field, on the 429 alone, in
		// whole seconds divided down from the nanoseconds to refill (7 is
		// 7.0 to 7.99 s), and what is left on every response.
		name:     "bucket4j 429",
		status:   429,
		header:   []string{"X-Rate-Limit-Retry-After-Seconds: 7", "X-Rate-Limit-Remaining: 0"},
		throttle: true,
		wait:     "8s x-rate-limit-retry-after-seconds",
		limits:   []string{"- requests - q=? r=0 w=? reset=? x-ratelimit"},
	},
	{
		// vulcand/oxy's rate limiter (Traefik's before v2): the wait as a
		// Go duration in X-Retry-In, and no Retry-After.
		name:     "oxy 429",
		status:   429,
		header:   []string{"X-Retry-In: 1.2s"},
		throttle: true,
		wait:     "1.2s x-retry-in",
	},
	{
		// Traefik's: both; Retry-After, the whole seconds above it, holds.
		name:     "traefik 429",
		status:   429,
		header:   []string{"Retry-After: 2", "X-Retry-In: 1.2s"},
		throttle: true,
		wait:     "2s Retry-After",
	},
	{
		// Spring Cloud Gateway's RedisRateLimiter (replenishRate 10,
		// burstCapacity 20): a token bucket, read as 20 requests a
		// bucket that fills in 2 s, 10 a second.
		name:   "spring cloud gateway",
		status: 200,
		header: []string{"X-RateLimit-Remaining: 9", "X-RateLimit-Replenish-Rate: 10", "X-RateLimit-Burst-Capacity: 20", "X-RateLimit-Requested-Tokens: 1"},
		limits: []string{"- requests - q=20 r=9 w=2s reset=? x-ratelimit"},
	},
	{
		// Its documented way below one request a second: each request
		// takes 60 tokens of a bucket of 60 that gains one a second.
		name:   "spring cloud gateway, one a minute",
		status: 200,
		header: []string{"X-RateLimit-Remaining: 59", "X-RateLimit-Replenish-Rate: 1", "X-RateLimit-Burst-Capacity: 60", "X-RateLimit-Requested-Tokens: 60"},
		limits: []string{"- requests - q=1 r=0 w=1m0s reset=? x-ratelimit"},
	},
	{
		// Refused: no Retry-After, nothing left; no reset to wait for.
		name:     "spring cloud gateway 429",
		status:   429,
		header:   []string{"X-RateLimit-Remaining: 0", "X-RateLimit-Replenish-Rate: 10", "X-RateLimit-Burst-Capacity: 20", "X-RateLimit-Requested-Tokens: 1"},
		throttle: true,
		limits:   []string{"- requests - q=20 r=0 w=2s reset=? x-ratelimit"},
	},
	{
		// A rate of 0 makes no bucket; the count is still read.
		name:   "spring cloud gateway, no rate",
		status: 200,
		header: []string{"X-RateLimit-Remaining: 3", "X-RateLimit-Replenish-Rate: 0", "X-RateLimit-Burst-Capacity: 20"},
		limits: []string{"- requests - q=? r=3 w=? reset=? x-ratelimit"},
	},
	{
		// Sentry's own family: a fixed window per caller and endpoint,
		// its reset in epoch seconds; its concurrency fields are not read.
		name:   "sentry",
		status: 200,
		header: []string{"X-Sentry-Rate-Limit-Limit: 40", "X-Sentry-Rate-Limit-Remaining: 39", "X-Sentry-Rate-Limit-Reset: 1795953660",
			"X-Sentry-Rate-Limit-ConcurrentLimit: 25", "X-Sentry-Rate-Limit-ConcurrentRemaining: 24"},
		limits: []string{"- requests - q=40 r=39 w=? reset=+1m0s x-ratelimit"},
	},
	{
		// Brevo's (x-sib-ratelimit-*), its reset a delay in seconds: the
		// wait of a 429 that says nothing else.
		name:     "brevo 429",
		status:   429,
		header:   []string{"x-sib-ratelimit-limit: 1000", "x-sib-ratelimit-remaining: 0", "x-sib-ratelimit-reset: 30"},
		throttle: true,
		wait:     "30s x-sib-ratelimit-reset",
		limits:   []string{"- requests - q=1000 r=0 w=? reset=+30s x-ratelimit"},
	},
	{
		// The Riot Games API's documented development key, 20 a second and
		// 100 in two minutes for the key, and an endpoint's own 2000 a
		// minute; the -Count fields say what each window has counted.
		name:   "riot",
		status: 200,
		header: []string{"X-App-Rate-Limit: 20:1,100:120", "X-App-Rate-Limit-Count: 1:1,1:120",
			"X-Method-Rate-Limit: 2000:60", "X-Method-Rate-Limit-Count: 1:60"},
		limits: []string{
			"app-1s requests app-1s q=20 r=19 w=1s reset=? riot",
			"app-120s requests app-120s q=100 r=99 w=2m0s reset=? riot",
			"method-60s requests - q=2000 r=1999 w=1m0s reset=? riot",
		},
	},
	{
		// A Riot 429 of the key's limit: its type is the reason, the
		// tenant its scope; counts past the limit leave nothing.
		name:     "riot 429",
		status:   429,
		header:   []string{"Retry-After: 7", "X-Rate-Limit-Type: application", "X-App-Rate-Limit: 20:1,100:120", "X-App-Rate-Limit-Count: 3:1,101:120"},
		throttle: true,
		wait:     "7s Retry-After",
		reason:   "application tenant",
		limits: []string{
			"app-1s requests app-1s q=20 r=17 w=1s reset=? riot",
			"app-120s requests app-120s q=100 r=0 w=2m0s reset=? riot",
		},
	},
	{
		// A method limit's 429, and a service's, which says no scope.
		name:     "riot 429 method",
		status:   429,
		header:   []string{"Retry-After: 1", "X-Rate-Limit-Type: method", "X-Method-Rate-Limit: 50:10", "X-Method-Rate-Limit-Count: 51:10"},
		throttle: true,
		wait:     "1s Retry-After",
		reason:   "method endpoint",
		limits:   []string{"method-10s requests - q=50 r=0 w=10s reset=? riot"},
	},
	{
		name:     "riot 429 service",
		status:   429,
		header:   []string{"X-Rate-Limit-Type: service"},
		throttle: true,
		reason:   "service ",
	},
	{
		// Hostile pairs are skipped one by one; a count for no window
		// stated is not read.
		name:   "riot malformed",
		status: 200,
		header: []string{"X-App-Rate-Limit: 20:1,abc,5:0,7:-3,9:99999999,1e3:10,30:x", "X-App-Rate-Limit-Count: 5:60,2:1"},
		limits: []string{"app-1s requests app-1s q=20 r=18 w=1s reset=? riot"},
		warnings: []string{
			`X-App-Rate-Limit: "abc" is not limit:seconds; ignored`,
			`X-App-Rate-Limit: "5:0" is not limit:seconds; ignored`,
			`X-App-Rate-Limit: "7:-3" is not limit:seconds; ignored`,
			`X-App-Rate-Limit: "9:99999999" is not limit:seconds; ignored`,
			`X-App-Rate-Limit: "1e3:10" is not limit:seconds; ignored`,
			`X-App-Rate-Limit: "30:x" is not limit:seconds; ignored`,
		},
	},
	{
		// MailerLite's wait in X-RateLimit-Retry-After, beside a reset
		// that is a date.
		name:     "mailerlite 429",
		status:   429,
		header:   []string{"X-RateLimit-Limit: 60", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 2026-11-29T12:00:40Z", "X-RateLimit-Retry-After: 38"},
		throttle: true,
		wait:     "38s x-ratelimit-retry-after",
		limits:   []string{"- requests - q=60 r=0 w=? reset=+40s x-ratelimit"},
	},
	{
		// Azure's X-Ms-Ratelimit-Remaining-* and HubSpot's own fields
		// are no vendor family of -Limit, -Remaining and -Reset.
		name:   "azure remaining only",
		status: 200,
		header: []string{"X-Ms-Ratelimit-Remaining-Subscription-Reads: 11999"},
	},
	{
		name:     "x-retry-in garbage",
		status:   429,
		header:   []string{"X-Retry-In: soon"},
		throttle: true,
		warnings: []string{`X-Retry-In: "soon" is not a duration; ignored`},
	},
	{
		name:     "jira burst 429",
		status:   429,
		header:   []string{"Retry-After: 1", "RateLimit-Reason: jira-burst-based", `RateLimit-Policy: "jira-burst-based";q=100;w=1`, `RateLimit: "jira-burst-based";r=0;t=1`},
		throttle: true,
		wait:     "1s Retry-After",
		reason:   "jira-burst-based endpoint",
		limits:   []string{"jira-burst-based requests endpoint q=100 r=0 w=1s reset=+1s ietf-structured"},
	},
	{
		name:   "jira quota 429 keeps burst and points apart",
		status: 429,
		header: []string{
			"Retry-After: 1847", "RateLimit-Reason: jira-quota-global-based",
			`RateLimit-Policy: "jira-burst-based";q=100;w=1, "global-app-quota";q=65000;w=3600`,
			`RateLimit: "global-app-quota";r=0;t=1847`,
			`Beta-RateLimit-Policy: "tenant-app-quota";q=30000;w=3600`,
			`Beta-RateLimit: "tenant-app-quota";t=1847`,
		},
		throttle: true,
		wait:     "30m47s Retry-After",
		reason:   "jira-quota-global-based global",
		limits: []string{
			"jira-burst-based requests endpoint q=100 r=? w=1s reset=? ietf-structured",
			"global-app-quota points global q=65000 r=0 w=1h0m0s reset=+30m47s ietf-structured",
			"tenant-app-quota points tenant q=30000 r=? w=1h0m0s reset=+30m47s ietf-structured info",
		},
	},
	{
		name:     "jira tenant quota exhausted without Retry-After waits for its reset",
		status:   429,
		header:   []string{"RateLimit-Reason: jira-quota-tenant-based", `RateLimit: "tenant-app-quota";r=0;t=600, "jira-burst-based";r=80;t=1`},
		throttle: true,
		wait:     "10m0s tenant-app-quota",
		reason:   "jira-quota-tenant-based tenant",
		limits: []string{
			"tenant-app-quota points tenant q=? r=0 w=? reset=+10m0s ietf-structured",
			"jira-burst-based requests endpoint q=? r=80 w=? reset=+1s ietf-structured",
		},
	},
	{
		name:   "jira per-issue write limit and X-RateLimit fields",
		status: 429,
		header: []string{
			"RateLimit-Reason: jira-per-issue-on-write", "X-RateLimit-Limit: 20", "X-RateLimit-Remaining: 0",
			"X-RateLimit-Reset: 2026-11-29T12:00:02Z", "X-RateLimit-NearLimit: true",
		},
		throttle: true,
		wait:     "2s X-RateLimit-Reset",
		reason:   "jira-per-issue-on-write key",
		limits:   []string{"- requests - q=20 r=0 w=? reset=+2s x-ratelimit"},
	},
	{
		name:     "jira 429 with only X-RateLimit-Reset waits for it",
		status:   429,
		header:   []string{"X-RateLimit-Limit: 100", "X-RateLimit-Remaining: 3", "X-RateLimit-Reset: 2026-11-29T12:00:05.250Z"},
		throttle: true,
		wait:     "5.25s X-RateLimit-Reset",
		limits:   []string{"- requests - q=100 r=3 w=? reset=+5.25s x-ratelimit"},
	},
	{
		name:   "missing r is unknown, never 0",
		status: 200,
		header: []string{`RateLimit: "tenant-app-quota";t=600`},
		limits: []string{"tenant-app-quota points tenant q=? r=? w=? reset=+10m0s ietf-structured"},
	},

	// GitHub.
	{
		name:   "github rest headers",
		status: 200,
		at:     time.Unix(1372700873-3600, 0),
		header: []string{"x-ratelimit-limit: 60", "x-ratelimit-remaining: 56", "x-ratelimit-used: 4", "x-ratelimit-reset: 1372700873", "x-ratelimit-resource: core"},
		limits: []string{"- requests resource:core q=60 r=56 w=1h0m0s reset=+1h0m0s x-ratelimit"},
	},
	{
		name:     "github primary limit exceeded 403",
		status:   403,
		at:       time.Unix(1377013266-600, 0),
		header:   []string{"x-ratelimit-limit: 60", "x-ratelimit-remaining: 0", "x-ratelimit-used: 60", "x-ratelimit-reset: 1377013266"},
		body:     `{"message": "API rate limit exceeded for xxx.xxx.xxx.xxx.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`,
		throttle: true,
		wait:     "10m0s X-RateLimit-Reset",
		limits:   []string{"- requests - q=60 r=0 w=? reset=+10m0s x-ratelimit"},
	},
	{
		name:     "github secondary limit 403",
		status:   403,
		header:   []string{"Retry-After: 60", "x-ratelimit-limit: 5000", "x-ratelimit-remaining: 4900", "x-ratelimit-resource: core"},
		body:     `{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`,
		throttle: true,
		wait:     "1m0s Retry-After",
		limits:   []string{"- requests resource:core q=5000 r=4900 w=1h0m0s reset=? x-ratelimit"},
	},
	{
		name:   "a 403 that is not a rate limit",
		status: 403,
		header: []string{"x-ratelimit-limit: 5000", "x-ratelimit-remaining: 4999"},
		body:   `{"message": "Resource not accessible by integration"}`,
		limits: []string{"- requests - q=5000 r=4999 w=? reset=? x-ratelimit"},
	},
	{
		name:     "github graphql RATE_LIMITED",
		status:   200,
		header:   []string{"x-ratelimit-limit: 5000", "x-ratelimit-remaining: 0", "x-ratelimit-resource: graphql"},
		body:     `{"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]}`,
		throttle: true,
		limits:   []string{"- points resource:graphql q=5000 r=0 w=1h0m0s reset=? x-ratelimit"},
	},

	// X, Okta, Reddit, GitLab, Zoom, Linear.
	{
		name:   "x api v2",
		status: 200,
		at:     time.Unix(1705420800-900, 0),
		header: []string{"x-rate-limit-limit: 900", "x-rate-limit-remaining: 847", "x-rate-limit-reset: 1705420800"},
		limits: []string{"- requests - q=900 r=847 w=? reset=+15m0s x-ratelimit"},
	},
	{
		name:   "okta",
		status: 200,
		at:     time.Unix(1609459200-60, 0),
		header: []string{"X-Rate-Limit-Limit: 1200", "X-Rate-Limit-Remaining: 1199", "X-Rate-Limit-Reset: 1609459200"},
		limits: []string{"- requests - q=1200 r=1199 w=? reset=+1m0s x-ratelimit"},
	},
	{
		name:   "reddit fractional remaining and delta reset",
		status: 200,
		header: []string{"X-Ratelimit-Used: 4", "X-Ratelimit-Remaining: 596.0", "X-Ratelimit-Reset: 348"},
		limits: []string{"- requests - q=? r=596 w=? reset=+5m48s x-ratelimit"},
	},
	{
		name:   "reddit exhausted fraction",
		status: 200,
		header: []string{"X-Ratelimit-Used: 99.5", "X-Ratelimit-Remaining: 0.5", "X-Ratelimit-Reset: 12"},
		hint:   "12s X-RateLimit-Reset",
		limits: []string{"- requests - q=? r=0.5 w=? reset=+12s x-ratelimit"},
	},
	{
		// Strava's documented example: a quarter-hour's and a day's
		// limit and usage, the application's, turning at the quarter
		// and at midnight UTC on the server's clock.
		name:   "strava",
		status: 200,
		at:     time.Date(2020, 10, 10, 20, 11, 1, 0, time.UTC),
		header: []string{"Date: Tue, 10 Oct 2020 20:11:01 GMT", "X-Ratelimit-Limit: 600,30000", "X-Ratelimit-Usage: 314,27536"},
		limits: []string{
			"15min requests 15min q=600 r=286 w=15m0s reset=+3m59s x-ratelimit",
			"daily requests daily q=30000 r=2464 w=24h0m0s reset=+3h48m59s x-ratelimit",
		},
	},
	{
		name:     "strava 429",
		status:   429,
		at:       time.Date(2020, 10, 10, 20, 11, 5, 0, time.UTC),
		header:   []string{"Date: Tue, 10 Oct 2020 20:11:05 GMT", "X-Ratelimit-Limit: 600,30000", "X-Ratelimit-Usage: 692,29300"},
		throttle: true,
		wait:     "3m55s X-RateLimit-Limit",
		limits: []string{
			"15min requests 15min q=600 r=0 w=15m0s reset=+3m55s x-ratelimit",
			"daily requests daily q=30000 r=700 w=24h0m0s reset=+3h48m55s x-ratelimit",
		},
	},
	{
		// The "non-upload" limit beside the overall one, on a server
		// whose clock is ten seconds behind this one.
		name:   "strava read limits",
		status: 200,
		at:     time.Date(2024, 3, 1, 23, 59, 50, 0, time.UTC),
		header: []string{"Date: Fri, 01 Mar 2024 23:59:40 GMT", "X-RateLimit-Limit: 200, 2000", "X-RateLimit-Usage: 10, 100", "X-ReadRateLimit-Limit: 100, 1000", "X-ReadRateLimit-Usage: 5, 50"},
		limits: []string{
			"15min requests 15min q=200 r=190 w=15m0s reset=+10s x-ratelimit",
			"daily requests daily q=2000 r=1900 w=24h0m0s reset=+10s x-ratelimit",
			"read-15min requests read-15min q=100 r=95 w=15m0s reset=+10s x-ratelimit",
			"read-daily requests read-daily q=1000 r=950 w=24h0m0s reset=+10s x-ratelimit",
		},
	},
	{
		name:     "strava malformed",
		status:   200,
		at:       time.Date(2020, 10, 10, 20, 11, 1, 0, time.UTC),
		header:   []string{"X-Ratelimit-Limit: 600,30000,5", "X-Ratelimit-Usage: 314,x"},
		warnings: []string{`X-RateLimit-Limit: "600,30000,5" is not a pair of counts; ignored`, `X-RateLimit-Usage: "314,x" is not a pair of counts; ignored`},
	},
	{
		// Datadog's fields (its documentation names them and gives no
		// values; these are constructed): the window in X-RateLimit-Period,
		// seconds to the reset, the limit's name.
		name:   "datadog",
		status: 200,
		header: []string{"X-RateLimit-Limit: 1000", "X-RateLimit-Period: 60", "X-RateLimit-Remaining: 999", "X-RateLimit-Reset: 42", "X-RateLimit-Name: monitor_status"},
		limits: []string{"monitor_status requests - q=1000 r=999 w=1m0s reset=+42s x-ratelimit"},
	},
	{
		// Atlassian Data Center's token bucket (its documentation names the
		// fields; these values are constructed): 20 tokens at most, 2 added
		// every second, so an empty bucket fills in 10 s.
		name:   "atlassian data center",
		status: 200,
		header: []string{"X-RateLimit-Limit: 20", "X-RateLimit-Remaining: 15", "X-RateLimit-Interval-Seconds: 1", "X-RateLimit-FillRate: 2", "Retry-After: 0"},
		hint:   "0s Retry-After",
		limits: []string{"- requests - q=20 r=15 w=10s reset=? x-ratelimit"},
	},
	{
		// Crossref's documented fields: 50 requests a second.
		name:   "crossref",
		status: 200,
		header: []string{"X-Rate-Limit-Limit: 50", "X-Rate-Limit-Interval: 1s"},
		limits: []string{"- requests - q=50 r=? w=1s reset=? x-ratelimit"},
	},
	{
		name:     "crossref malformed interval",
		status:   200,
		header:   []string{"X-Rate-Limit-Limit: 50", "X-Rate-Limit-Interval: soon"},
		limits:   []string{"- requests - q=50 r=? w=? reset=? x-ratelimit"},
		warnings: []string{`X-Rate-Limit-Interval: "soon" is not a window; ignored`},
	},
	{
		// Cerebras's documented example: Kong-style names, resets in
		// seconds to the turn, and a limit of tokens.
		name:   "cerebras",
		status: 200,
		header: []string{
			"x-ratelimit-limit-requests-day: 1000000000", "x-ratelimit-limit-tokens-minute: 1000000000",
			"x-ratelimit-remaining-requests-day: 999997455", "x-ratelimit-remaining-tokens-minute: 999998298",
			"x-ratelimit-reset-requests-day: 33011.382867097855", "x-ratelimit-reset-tokens-minute: 11.382867097854614",
		},
		limits: []string{
			"requests-day requests - q=1e+09 r=9.99997455e+08 w=24h0m0s reset=+9h10m11.382867098s x-ratelimit",
			"tokens-minute tokens - q=1e+09 r=9.99998298e+08 w=1m0s reset=+11.382867098s x-ratelimit",
		},
	},
	{
		// Xendit's fields (docs.xendit.co/apidocs/rate-limits): the draft's
		// separate fields under another spelling.
		name:   "xendit",
		status: 200,
		header: []string{"Rate-Limit-Limit: 600", "Rate-Limit-Remaining: 583", "Rate-Limit-Reset: 58.37"},
		limits: []string{"- requests - q=600 r=583 w=? reset=+58.37s ietf-separate"},
	},
	{
		// Freshdesk's fields: the quota in X-RateLimit-Total, the cost of
		// the request in X-RateLimit-Used-CurrentRequest, Retry-After on a
		// 429.
		name:     "freshdesk 429",
		status:   429,
		header:   []string{"X-RateLimit-Total: 700", "X-RateLimit-Remaining: 0", "X-RateLimit-Used-CurrentRequest: 1", "Retry-After: 27"},
		throttle: true,
		wait:     "27s Retry-After",
		limits:   []string{"- requests - q=700 r=0 w=? reset=? x-ratelimit"},
	},
	{
		// Contentful's per-second and per-hour limits beside the reset of
		// whichever is spent (the Hour fields' values are constructed).
		name:     "contentful 429",
		status:   429,
		header:   []string{"X-Contentful-RateLimit-Hour-Limit: 36000", "X-Contentful-RateLimit-Hour-Remaining: 35990", "X-Contentful-RateLimit-Second-Limit: 7", "X-Contentful-RateLimit-Second-Remaining: 0", "X-Contentful-RateLimit-Reset: 1"},
		throttle: true,
		wait:     "1s x-contentful-ratelimit-reset",
		limits: []string{
			"- requests - q=? r=? w=? reset=+1s x-ratelimit",
			"second requests - q=7 r=0 w=1s reset=? x-ratelimit",
			"hour requests - q=36000 r=35990 w=1h0m0s reset=? x-ratelimit",
		},
	},
	{
		// Xero's fields state what is left of each limit, and a 429 names
		// the spent one.
		name:     "xero 429",
		status:   429,
		header:   []string{"Retry-After: 38", "X-Rate-Limit-Problem: minute", "X-MinLimit-Remaining: 0", "X-DayLimit-Remaining: 4123", "X-AppMinLimit-Remaining: 9876"},
		throttle: true,
		wait:     "38s Retry-After",
		reason:   "minute ",
		limits: []string{
			"minute requests minute q=60 r=0 w=1m0s reset=? x-ratelimit",
			"day requests day q=5000 r=4123 w=24h0m0s reset=? x-ratelimit",
			"app-minute requests app-minute q=10000 r=9876 w=1m0s reset=? x-ratelimit",
		},
	},
	{
		// A connection whose limits were raised: a count above the
		// documented quota shows it is not the quota.
		name:   "xero raised",
		status: 200,
		header: []string{"X-MinLimit-Remaining: 119", "X-DayLimit-Remaining: 4999"},
		limits: []string{
			"minute requests minute q=? r=119 w=1m0s reset=? x-ratelimit",
			"day requests day q=5000 r=4999 w=24h0m0s reset=? x-ratelimit",
		},
	},
	{
		// HighLevel's fields (its documentation names them and gives the
		// defaults, 100 per 10 s and 200,000 a day; the values are
		// constructed from those).
		name:     "highlevel 429",
		status:   429,
		header:   []string{"X-RateLimit-Limit-Daily: 200000", "X-RateLimit-Daily-Remaining: 187654", "X-RateLimit-Interval-Milliseconds: 10000", "X-RateLimit-Max: 100", "X-RateLimit-Remaining: 0", "Retry-After: 4"},
		throttle: true,
		wait:     "4s Retry-After",
		limits: []string{
			"daily requests - q=200000 r=187654 w=24h0m0s reset=? x-ratelimit",
			"burst requests - q=100 r=0 w=10s reset=? x-ratelimit",
		},
	},
	{
		// Fireworks's adaptive limits (its documentation names the Limit
		// fields and the default limits; the Remaining values are
		// constructed): input and output tokens a minute.
		name:   "fireworks",
		status: 200,
		header: []string{"X-Ratelimit-Limit-Tokens-Prompt: 3600000", "X-Ratelimit-Remaining-Tokens-Prompt: 3590000", "X-Ratelimit-Limit-Tokens-Generated: 36000", "X-Ratelimit-Remaining-Tokens-Generated: 35000"},
		limits: []string{
			"tokens-generated output-tokens - q=36000 r=35000 w=1m0s reset=? x-ratelimit",
			"tokens-prompt input-tokens - q=3.6e+06 r=3.59e+06 w=1m0s reset=? x-ratelimit",
		},
	},
	{
		// Yelp's documented fields: a daily quota turning at midnight UTC,
		// and the endpoint's own daily limit. RateLimit-ResetTime alone is
		// no GitLab's (whose limits are a minute's).
		name:   "yelp",
		status: 200,
		at:     time.Date(2024, 3, 27, 12, 0, 0, 0, time.UTC),
		header: []string{"RateLimit-DailyLimit: 500", "RateLimit-Remaining: 499", "RateLimit-ResourceDailyLimit: 100", "RateLimit-ResourceRemaining: 99", "RateLimit-ResetTime: 2024-03-28T00:00:00+00:00"},
		limits: []string{
			"resource-daily requests endpoint q=100 r=99 w=24h0m0s reset=+12h0m0s ietf-separate",
			"- requests - q=500 r=499 w=24h0m0s reset=+12h0m0s ietf-separate",
		},
	},
	{
		// DocuSign's hourly limit beside its 30-second burst limit (its
		// documentation names the fields and gives the defaults; these
		// values are constructed): the burst is spent, the hour is not,
		// so the refusal is the burst's, and waits its 30 seconds, not
		// the hour's reset.
		name:     "docusign burst 429",
		status:   429,
		at:       time.Unix(1700000000, 0),
		header:   []string{"X-RateLimit-Limit: 3000", "X-RateLimit-Remaining: 2500", "X-RateLimit-Reset: 1700002000", "X-BurstLimit-Limit: 500", "X-BurstLimit-Remaining: 0"},
		throttle: true,
		wait:     "30s burst",
		limits: []string{
			"burst requests - q=500 r=0 w=30s reset=? x-ratelimit",
			"- requests - q=3000 r=2500 w=? reset=+33m20s x-ratelimit",
		},
	},
	{
		// Azure DevOps's fields (its documentation names them; these values
		// are constructed): TSTUs in a sliding five minutes, not a GitHub
		// resource's hour.
		name:     "azure devops 429",
		status:   429,
		at:       time.Unix(1700000000, 0),
		header:   []string{"Retry-After: 10", "X-RateLimit-Resource: Core", "X-RateLimit-Delay: 0.5", "X-RateLimit-Limit: 200", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 1700000300"},
		throttle: true,
		wait:     "10s Retry-After",
		limits:   []string{"Core tstu - q=200 r=0 w=5m0s reset=+5m0s x-ratelimit"},
	},
	{
		// BigCommerce's documented fields: 25 requests a 5-second window,
		// 6 left, the window turning in 3 s, in milliseconds.
		name:   "bigcommerce",
		status: 200,
		header: []string{"X-Rate-Limit-Requests-Left: 6", "X-Rate-Limit-Requests-Quota: 25", "X-Rate-Limit-Time-Reset-Ms: 3000", "X-Rate-Limit-Time-Window-Ms: 5000"},
		limits: []string{"store requests - q=25 r=6 w=5s reset=+3s x-ratelimit"},
	},
	{
		// Its documented 429: the reset alone, the wait.
		name:     "bigcommerce 429",
		status:   429,
		header:   []string{"X-Rate-Limit-Time-Reset-Ms: 15000"},
		throttle: true,
		wait:     "15s X-Rate-Limit-Time-Reset-Ms",
		limits:   []string{"store requests - q=? r=? w=? reset=+15s x-ratelimit"},
	},
	{
		// KuCoin's documented fields: a pool's quota, what is left, and the
		// milliseconds until it is whole.
		name:   "kucoin",
		status: 200,
		header: []string{"gw-ratelimit-limit: 500", "gw-ratelimit-remaining: 300", "gw-ratelimit-reset: 1489"},
		limits: []string{"pool requests - q=500 r=300 w=30s reset=+1.489s x-ratelimit"},
	},
	{
		name:     "kucoin 429",
		status:   429,
		header:   []string{"gw-ratelimit-limit: 500", "gw-ratelimit-remaining: 0", "gw-ratelimit-reset: 1489"},
		throttle: true,
		wait:     "1.489s gw-ratelimit-reset",
		limits:   []string{"pool requests - q=500 r=0 w=30s reset=+1.489s x-ratelimit"},
	},
	{
		// App Store Connect's documented field: 3500 requests an hour per
		// API key, 500 left.
		name:   "app store connect",
		status: 200,
		header: []string{"X-Rate-Limit: user-hour-lim:3500;user-hour-rem:500;"},
		limits: []string{"user-hour requests - q=3500 r=500 w=1h0m0s reset=? x-ratelimit"},
	},
	{
		name:     "app store connect malformed",
		status:   200,
		header:   []string{"X-Rate-Limit: user-hour-lim:lots;user-hour-rem:5"},
		limits:   []string{"user-hour requests - q=? r=5 w=1h0m0s reset=? x-ratelimit"},
		warnings: []string{`X-Rate-Limit: "user-hour-lim:lots" is not name-lim:count or name-rem:count; ignored`},
	},
	{
		// Amazon's SP-API: the operation's rate, requests a second.
		name:   "amazon sp-api",
		status: 200,
		header: []string{"x-amzn-RateLimit-Limit: 2.0", "x-amzn-RequestId: 6b5d0fd2"},
		limits: []string{"- requests - q=2 r=? w=1s reset=? x-ratelimit"},
	},
	{
		// One request a minute, as 0.0167 a second says.
		name:   "amazon sp-api slow operation",
		status: 200,
		header: []string{"x-amzn-RateLimit-Limit: 0.0167"},
		limits: []string{"- requests - q=1 r=? w=59.880239521s reset=? x-ratelimit"},
	},
	{
		// Binance's ban after repeated 429s: a 418 with a Retry-After to
		// its end (the values are constructed).
		name:     "binance 418 ban",
		status:   418,
		header:   []string{"Retry-After: 120", "X-MBX-USED-WEIGHT-1M: 6105"},
		throttle: true,
		wait:     "2m0s Retry-After",
	},
	{
		// A 418 from anyone else is no throttle.
		name:   "418 elsewhere",
		status: 418,
		header: []string{"Retry-After: 120"},
		hint:   "2m0s Retry-After",
	},
	{
		// Hugging Face Hub's policy, its kind before its name, and a
		// refusal 55 s before the window turns.
		name:     "hugging face 429",
		status:   429,
		header:   []string{`RateLimit-Policy: "fixed window";"api";q=500;w=300`, `RateLimit: "api";r=0;t=55`},
		throttle: true,
		wait:     "55s api",
		limits:   []string{"api requests - q=500 r=0 w=5m0s reset=+55s ietf-structured"},
	},
	{
		// Bybit's documented fields: 100 a second for the endpoint, 99
		// left, the turn in epoch milliseconds.
		name:   "bybit",
		status: 200,
		at:     time.UnixMilli(1672738134000),
		header: []string{"X-Bapi-Limit: 100", "X-Bapi-Limit-Status: 99", "X-Bapi-Limit-Reset-Timestamp: 1672738134824"},
		limits: []string{"- requests - q=100 r=99 w=1s reset=+824ms x-ratelimit"},
	},
	{
		// X-RateLimit-Usage beside X-RateLimit-Remaining is not Strava's
		// pair: the usual fields are read.
		name:   "usage beside remaining",
		status: 200,
		header: []string{"X-RateLimit-Limit: 100", "X-RateLimit-Remaining: 40", "X-RateLimit-Usage: 60", "X-RateLimit-Reset: 30"},
		limits: []string{"- requests - q=100 r=40 w=? reset=+30s x-ratelimit"},
	},
	{
		// Meta's Graph API usage, percent of the app's hourly limit spent.
		name:   "meta app usage",
		status: 200,
		header: []string{`X-App-Usage: {"call_count":28,"total_time":25,"total_cputime":25}`},
		limits: []string{"app requests app q=? r=? w=1h0m0s reset=? x-ratelimit used=0.28"},
	},
	{
		// The app's limit reached: error code 4 in a 400.
		name:     "meta app limit 400",
		status:   400,
		header:   []string{`X-App-Usage: {"call_count":100,"total_time":25,"total_cputime":25}`},
		body:     `{"error":{"message":"(#4) Application request limit reached","type":"OAuthException","is_transient":true,"code":4,"fbtrace_id":"A1b2"}}`,
		throttle: true,
		reason:   "meta-4 tenant",
		limits:   []string{"app requests app q=? r=? w=1h0m0s reset=? x-ratelimit used=1"},
	},
	{
		// A business use case spent, regained in 5 minutes.
		name:     "meta business use case 400",
		status:   400,
		header:   []string{`X-Business-Use-Case-Usage: {"112233":[{"type":"ads_management","call_count":100,"total_cputime":20,"total_time":20,"estimated_time_to_regain_access":5}]}`},
		body:     `{"error":{"message":"User request limit reached","type":"OAuthException","code":80004,"fbtrace_id":"B2c3"}}`,
		throttle: true,
		wait:     "5m0s X-Business-Use-Case-Usage",
		reason:   "meta-80004 tenant",
		limits:   []string{"buc-ads_management requests buc-ads_management q=? r=0 w=1h0m0s reset=+5m0s x-ratelimit used=1"},
	},
	{
		// Another of Meta's errors is no throttle.
		name:   "meta other error 400",
		status: 400,
		header: []string{`X-App-Usage: {"call_count":3,"total_time":1,"total_cputime":1}`},
		body:   `{"error":{"message":"Invalid parameter","type":"OAuthException","code":100}}`,
		limits: []string{"app requests app q=? r=? w=1h0m0s reset=? x-ratelimit used=0.03"},
	},
	{
		// Nor is another server's code 4.
		name:   "code 4 elsewhere",
		status: 400,
		body:   `{"error":{"message":"bad","code":4}}`,
	},
	{
		// Bitbucket Cloud's fields (the values are constructed): an
		// hour's limit, its resource, near the limit, nothing left said.
		// No GitHub, whose secondary limit's minute its 429 was given.
		name:     "bitbucket 429",
		status:   429,
		header:   []string{"X-RateLimit-Limit: 1000", "X-RateLimit-Resource: api", "X-RateLimit-NearLimit: true"},
		throttle: true,
		limits:   []string{"api requests - q=1000 r=? w=1h0m0s reset=? x-ratelimit"},
	},
	{
		// Akamai's X-RateLimit-Next: when the next request may go
		// (values constructed).
		name:     "akamai 429",
		status:   429,
		at:       time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		header:   []string{"X-RateLimit-Limit: 60", "X-RateLimit-Remaining: 0", "X-RateLimit-Next: 2026-11-29T12:00:05Z"},
		throttle: true,
		wait:     "5s X-RateLimit-Next",
		limits:   []string{"- requests - q=60 r=0 w=? reset=+5s x-ratelimit"},
	},
	{
		// ip-api.com's: requests left in the minute and the seconds until
		// it turns (values constructed).
		name:     "ip-api 429",
		status:   429,
		header:   []string{"X-Rl: 0", "X-Ttl: 42"},
		throttle: true,
		wait:     "42s X-Ttl",
		limits:   []string{"- requests - q=? r=0 w=1m0s reset=+42s x-ratelimit"},
	},
	{
		// Cloudinary's Admin API fields (values as in its SDKs' tests).
		name:   "cloudinary",
		status: 200,
		at:     time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		header: []string{"X-FeatureRateLimit-Limit: 500", "X-FeatureRateLimit-Remaining: 480", "X-FeatureRateLimit-Reset: Sun, 29 Nov 2026 13:00:00 GMT"},
		limits: []string{"- requests - q=500 r=480 w=1h0m0s reset=+1h0m0s x-ratelimit"},
	},
	{
		// Discogs's documented fields: the quota in the bare field.
		name:   "discogs",
		status: 200,
		header: []string{"X-Discogs-Ratelimit: 60", "X-Discogs-Ratelimit-Used: 1", "X-Discogs-Ratelimit-Remaining: 59"},
		limits: []string{"- requests - q=60 r=59 w=1m0s reset=? x-ratelimit"},
	},
	{
		// The Brave Search API's documented fields: a second's limit and
		// a month's, each field a list in the same order.
		name:   "brave search",
		status: 200,
		header: []string{"X-RateLimit-Limit: 1, 15000", "X-RateLimit-Policy: 1;w=1, 15000;w=2592000", "X-RateLimit-Remaining: 1, 1000", "X-RateLimit-Reset: 1, 1419704"},
		limits: []string{
			"- requests - q=1 r=1 w=1s reset=+1s x-ratelimit",
			"- requests - q=15000 r=1000 w=720h0m0s reset=+394h21m44s x-ratelimit",
		},
	},
	{
		// The month spent: its turn is the wait.
		name:     "brave search 429",
		status:   429,
		header:   []string{"X-RateLimit-Limit: 1, 15000", "X-RateLimit-Policy: 1;w=1, 15000;w=2592000", "X-RateLimit-Remaining: 1, 0", "X-RateLimit-Reset: 1, 1419704"},
		throttle: true,
		wait:     "394h21m44s X-RateLimit-Reset",
		limits: []string{
			"- requests - q=1 r=1 w=1s reset=+1s x-ratelimit",
			"- requests - q=15000 r=0 w=720h0m0s reset=+394h21m44s x-ratelimit",
		},
	},
	{
		// SurveyMonkey's fields (names documented, values constructed): the
		// app's minute and day, resets in seconds; the day is spent.
		name:     "surveymonkey 429",
		status:   429,
		header:   []string{"X-Ratelimit-App-Global-Minute-Limit: 120", "X-Ratelimit-App-Global-Minute-Remaining: 110", "X-Ratelimit-App-Global-Minute-Reset: 45", "X-Ratelimit-App-Global-Day-Limit: 500", "X-Ratelimit-App-Global-Day-Remaining: 0", "X-Ratelimit-App-Global-Day-Reset: 36000"},
		throttle: true,
		wait:     "10h0m0s X-Ratelimit-App-Global-Day-Reset",
		limits: []string{
			"app-global-day requests app-global-day q=500 r=0 w=24h0m0s reset=+10h0m0s x-ratelimit",
			"app-global-minute requests app-global-minute q=120 r=110 w=1m0s reset=+45s x-ratelimit",
		},
	},
	{
		// Connecteam's field names (values constructed).
		name:   "connecteam",
		status: 200,
		at:     time.Unix(1700000000, 0),
		header: []string{"X-RateLimit-Minute-Limit: 60", "X-RateLimit-Minute-Remaining: 59", "X-RateLimit-Minute-Reset: 1700000030"},
		limits: []string{"minute requests - q=60 r=59 w=1m0s reset=+30s x-ratelimit"},
	},
	{
		// Toggl's spent hourly quota, answered 402 (field names from
		// clients that cite its documentation; values constructed).
		name:     "toggl 402",
		status:   402,
		header:   []string{"X-Toggl-Quota-Remaining: 0", "X-Toggl-Quota-Resets-In: 1800"},
		throttle: true,
		wait:     "30m0s X-Toggl-Quota-Resets-In",
		limits:   []string{"quota requests quota q=? r=0 w=1h0m0s reset=+30m0s x-ratelimit"},
	},
	{
		// Another server's 402 is a bill, not a throttle.
		name:   "402 elsewhere",
		status: 402,
		header: []string{"Retry-After: 60"},
		hint:   "1m0s Retry-After",
	},
	{
		// Split.io's fields (names documented, values constructed): the
		// organisation's count is spent, and its window is the wait.
		name:     "split 429",
		status:   429,
		header:   []string{"X-RateLimit-Remaining-Org: 0", "X-RateLimit-Remaining-IP: 37", "X-RateLimit-Reset-Seconds-Org: 8", "X-RateLimit-Reset-Seconds-IP: 3"},
		throttle: true,
		wait:     "8s X-RateLimit-Reset-Seconds-Org",
		limits: []string{
			"org requests org q=? r=0 w=? reset=+8s x-ratelimit",
			"ip requests ip q=? r=37 w=? reset=+3s x-ratelimit",
		},
	},
	{
		// LaunchDarkly's fields (names documented, values constructed): the
		// route's count spent, both windows ten seconds, the reset in epoch
		// milliseconds.
		name:     "launchdarkly 429",
		status:   429,
		at:       time.UnixMilli(1795953600000),
		header:   []string{"X-Ratelimit-Global-Remaining: 12", "X-Ratelimit-Route-Remaining: 0", "X-Ratelimit-Reset: 1795953607000"},
		throttle: true,
		wait:     "7s X-RateLimit-Reset",
		limits: []string{
			"global requests global-10s q=? r=12 w=10s reset=+7s x-ratelimit",
			"route requests endpoint q=? r=0 w=10s reset=+7s x-ratelimit",
			"- requests - q=? r=? w=? reset=+7s x-ratelimit",
		},
	},
	{
		// Opsgenie's fields (as its Go SDK reads them): the account's
		// minute bucket refused.
		name:     "opsgenie 429",
		status:   429,
		header:   []string{"X-RateLimit-State: THROTTLED", "X-RateLimit-Reason: ACCOUNT", "X-RateLimit-Period-In-Sec: 60"},
		throttle: true,
		wait:     "1m0s X-RateLimit-Period-In-Sec",
		reason:   "ACCOUNT ",
		limits:   []string{"period requests - q=? r=0 w=1m0s reset=+1m0s x-ratelimit"},
	},
	{
		// monday.com's complexity budget spent (values constructed): its
		// wait in the error's extensions, also on a 200.
		name:     "monday complexity",
		status:   200,
		body:     `{"errors":[{"message":"Complexity budget exhausted","extensions":{"code":"COMPLEXITY_BUDGET_EXHAUSTED","complexity":5000,"complexity_budget_left":0,"complexity_budget_limit":10000000,"retry_in_seconds":12}}]}`,
		throttle: true,
		wait:     "12s body:extensions.retry_in_seconds",
	},
	{
		// Composio's fields (names documented, values constructed): the
		// quota in the bare field, the window in X-RateLimit-Window-Size.
		name:   "composio",
		status: 200,
		header: []string{"X-RateLimit: 20000", "X-RateLimit-Remaining: 19990", "X-RateLimit-Window-Size: 600s"},
		limits: []string{"- requests - q=20000 r=19990 w=10m0s reset=? x-ratelimit"},
	},
	{
		// Docker Hub's documented pull limit: both counts carry the
		// window as a parameter (docs.docker.com/docker-hub/usage/pulls).
		name:   "docker hub",
		status: 200,
		header: []string{"ratelimit-limit: 100;w=21600", "ratelimit-remaining: 20;w=21600", "docker-ratelimit-source: 192.0.2.1"},
		limits: []string{"- requests - q=100 r=20 w=6h0m0s reset=? ietf-separate"},
	},
	{
		name:     "docker hub 429",
		status:   429,
		header:   []string{"ratelimit-limit: 100;w=21600", "ratelimit-remaining: 0;w=21600"},
		throttle: true,
		limits:   []string{"- requests - q=100 r=0 w=6h0m0s reset=? ietf-separate"},
	},
	{
		name:   "remaining with its window and no limit",
		status: 200,
		header: []string{"ratelimit-remaining: 7;w=60"},
		limits: []string{"- requests - q=? r=7 w=1m0s reset=? ietf-separate"},
	},
	{
		name:     "remaining as a list is no count",
		status:   200,
		header:   []string{"ratelimit-limit: 10", "ratelimit-remaining: 7, 8"},
		limits:   []string{"- requests - q=10 r=? w=? reset=? ietf-separate"},
		warnings: []string{`RateLimit-Remaining: "7, 8" is not a count; ignored`},
	},
	{
		name:   "gitlab epoch reset under RateLimit-Reset",
		status: 200,
		at:     time.Unix(1563325137-60, 0),
		header: []string{"RateLimit-Limit: 600", "RateLimit-Observed: 6", "RateLimit-Remaining: 594", "RateLimit-Reset: 1563325137", "RateLimit-ResetTime: Wed, 17 Jul 2019 00:58:57 GMT"},
		limits: []string{"- requests - q=600 r=594 w=1m0s reset=+1m0s ietf-separate"},
	},
	{
		name:     "gitlab throttled",
		status:   429,
		at:       time.Unix(1609844400-30, 0),
		header:   []string{"RateLimit-Limit: 60", "RateLimit-Name: throttle_authenticated_web", "RateLimit-Observed: 67", "RateLimit-Remaining: 0", "RateLimit-Reset: 1609844400", "RateLimit-ResetTime: Tue, 05 Jan 2021 11:00:00 GMT", "Retry-After: 30"},
		throttle: true,
		wait:     "30s Retry-After",
		limits:   []string{"throttle_authenticated_web requests - q=60 r=0 w=1m0s reset=+30s ietf-separate"},
	},
	{
		name:     "zoom daily limit with an RFC 3339 Retry-After",
		status:   429,
		at:       time.Date(2020, 5, 30, 12, 0, 0, 0, time.UTC),
		header:   []string{"X-RateLimit-Category: Heavy", "X-RateLimit-Type: Daily-limit", "X-RateLimit-Limit: 30000", "X-RateLimit-Remaining: 0", "Retry-After: 2020-05-31T00:00:00Z"},
		throttle: true,
		wait:     "12h0m0s Retry-After",
		limits:   []string{"Heavy requests - q=30000 r=0 w=24h0m0s reset=? x-ratelimit"},
	},
	{
		name:   "linear epoch milliseconds",
		status: 200,
		at:     time.UnixMilli(1764417600000 - 1500),
		header: []string{"X-RateLimit-Requests-Limit: 5000", "X-RateLimit-Requests-Remaining: 4999", "X-RateLimit-Requests-Reset: 1764417600000", "X-RateLimit-Complexity-Limit: 250000", "X-RateLimit-Complexity-Remaining: 249950", "X-RateLimit-Complexity-Reset: 1764417600000", "X-Complexity: 50"},
		limits: []string{
			"requests requests - q=5000 r=4999 w=1h0m0s reset=+1.5s x-ratelimit",
			"complexity points - q=250000 r=249950 w=1h0m0s reset=+1.5s x-ratelimit cost=50",
		},
	},
	{
		name:     "linear RATELIMITED body",
		status:   400,
		body:     `{"errors":[{"message":"Rate limit exceeded","extensions":{"code":"RATELIMITED"}}]}`,
		throttle: true,
	},
	{
		name:   "limit list in X-RateLimit-Limit",
		status: 200,
		header: []string{"X-RateLimit-Limit: 100, 100;window=60, 10000;window=86400", "X-RateLimit-Remaining: 98", "X-RateLimit-Reset: 3"},
		limits: []string{
			"- requests - q=100 r=98 w=1m0s reset=+3s x-ratelimit",
			"- requests - q=10000 r=? w=24h0m0s reset=? x-ratelimit",
		},
	},

	// OpenAI, Anthropic.
	{
		name:   "openai",
		status: 200,
		header: []string{"x-ratelimit-limit-requests: 60", "x-ratelimit-limit-tokens: 150000", "x-ratelimit-remaining-requests: 59", "x-ratelimit-remaining-tokens: 149984", "x-ratelimit-reset-requests: 1s", "x-ratelimit-reset-tokens: 6m0s"},
		limits: []string{
			"requests requests - q=60 r=59 w=1m0s reset=+1s openai",
			// A reset six minutes off: not an allowance whole again within
			// a minute, so its window is not known.
			"tokens tokens - q=150000 r=149984 w=? reset=+6m0s openai",
		},
	},
	{
		// Groq's documented example: its requests fields count a day, its
		// tokens fields a minute.
		name:   "groq",
		status: 200,
		header: []string{"x-groq-region: us-east-1", "x-ratelimit-limit-requests: 14400", "x-ratelimit-limit-tokens: 18000", "x-ratelimit-remaining-requests: 14370", "x-ratelimit-remaining-tokens: 17997", "x-ratelimit-reset-requests: 2m59.56s", "x-ratelimit-reset-tokens: 7.66s"},
		limits: []string{
			"requests requests - q=14400 r=14370 w=24h0m0s reset=+2m59.56s openai",
			"tokens tokens - q=18000 r=17997 w=1m0s reset=+7.66s openai",
		},
	},
	{
		// The same without X-Groq-Region: a reset three minutes off is
		// no minute's.
		name:     "groq 429 unrecognised",
		status:   429,
		header:   []string{"retry-after: 2", "x-ratelimit-limit-requests: 14400", "x-ratelimit-limit-tokens: 18000", "x-ratelimit-remaining-requests: 14370", "x-ratelimit-remaining-tokens: 17997", "x-ratelimit-reset-requests: 2m59.56s", "x-ratelimit-reset-tokens: 7.66s"},
		throttle: true,
		wait:     "2s Retry-After",
		limits: []string{
			"requests requests - q=14400 r=14370 w=? reset=+2m59.56s openai",
			"tokens tokens - q=18000 r=17997 w=1m0s reset=+7.66s openai",
		},
	},
	{
		name:     "openai 429 tokens exhausted",
		status:   429,
		header:   []string{"retry-after: 20", "x-ratelimit-limit-requests: 5000", "x-ratelimit-remaining-requests: 4999", "x-ratelimit-reset-requests: 12ms", "x-ratelimit-limit-tokens: 160000", "x-ratelimit-remaining-tokens: 0", "x-ratelimit-reset-tokens: 19.5s"},
		throttle: true,
		wait:     "20s Retry-After",
		limits: []string{
			"requests requests - q=5000 r=4999 w=1m0s reset=+12ms openai",
			"tokens tokens - q=160000 r=0 w=1m0s reset=+19.5s openai",
		},
	},
	{
		name:   "anthropic",
		status: 200,
		at:     time.Date(2025, 8, 21, 12, 40, 58, 0, time.UTC),
		header: []string{
			"anthropic-ratelimit-input-tokens-limit: 80000", "anthropic-ratelimit-input-tokens-remaining: 80000", "anthropic-ratelimit-input-tokens-reset: 2025-08-21T12:40:59Z",
			"anthropic-ratelimit-output-tokens-limit: 16000", "anthropic-ratelimit-output-tokens-remaining: 16000", "anthropic-ratelimit-output-tokens-reset: 2025-08-21T12:41:00Z",
			"anthropic-ratelimit-requests-limit: 1000", "anthropic-ratelimit-requests-remaining: 999", "anthropic-ratelimit-requests-reset: 2025-08-21T12:40:59Z",
			"anthropic-ratelimit-tokens-limit: 96000", "anthropic-ratelimit-tokens-remaining: 96000", "anthropic-ratelimit-tokens-reset: 2025-08-21T12:40:59Z",
		},
		limits: []string{
			"requests requests - q=1000 r=999 w=1m0s reset=+1s anthropic",
			"tokens tokens - q=96000 r=96000 w=1m0s reset=+1s anthropic",
			"input-tokens input-tokens - q=80000 r=80000 w=1m0s reset=+1s anthropic",
			"output-tokens output-tokens - q=16000 r=16000 w=1m0s reset=+2s anthropic",
		},
	},

	// Discord.
	{
		name:   "discord headers",
		status: 200,
		header: []string{"X-RateLimit-Limit: 5", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 1470173023.123", "X-RateLimit-Reset-After: 1", "X-RateLimit-Bucket: abcd1234"},
		hint:   "1s X-RateLimit-Reset-After",
		limits: []string{"- requests bucket:abcd1234 q=5 r=0 w=? reset=+1s discord"},
	},
	{
		name:     "discord fractional epoch reset",
		status:   200,
		at:       time.Unix(1470173022, 0),
		header:   []string{"X-RateLimit-Limit: 5", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 1470173023.123", "X-RateLimit-Bucket: abcd1234"},
		hint:     "1.123s X-RateLimit-Reset",
		limits:   []string{"- requests bucket:abcd1234 q=5 r=0 w=? reset=+1.123s discord"},
		throttle: false,
	},
	{
		name:     "discord global 429 body",
		status:   429,
		header:   []string{"X-RateLimit-Global: true", "X-RateLimit-Scope: global"},
		body:     `{"message": "You are being rate limited.", "retry_after": 64.57, "global": true}`,
		throttle: true,
		wait:     "1m4.57s body:retry_after",
		reason:   "global global",
	},
	{
		name:     "discord shared resource 429",
		status:   429,
		header:   []string{"Retry-After: 65", "X-RateLimit-Scope: shared", "X-RateLimit-Limit: 5", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset-After: 64.57", "X-RateLimit-Bucket: abcd1234"},
		body:     `{"message": "You are being rate limited.", "retry_after": 64.57, "global": false}`,
		throttle: true,
		wait:     "1m5s Retry-After",
		reason:   "shared key",
		limits:   []string{"- requests bucket:abcd1234 q=5 r=0 w=? reset=+1m4.57s discord"},
	},

	{
		// The Gemini API's quota error (Google's APIs' error model): the
		// wait in a google.rpc.RetryInfo of its details, and no header.
		name:   "gemini 429 retryDelay",
		status: 429,
		header: []string{"Content-Type: application/json; charset=UTF-8"},
		body: `{"error": {"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED", "details": [` +
			`{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},` +
			`{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "46s"}]}}`,
		throttle: true,
		wait:     "46s body:retryDelay",
	},
	{
		// UNAVAILABLE with a RetryInfo: a 503 that says when to come back.
		name:     "google 503 retryDelay",
		status:   503,
		body:     `{"error": {"code": 503, "status": "UNAVAILABLE", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2.500s"}]}}`,
		throttle: true,
		wait:     "2.5s body:retryDelay",
	},
	{
		// A Retry-After holds over the body's delay.
		name:     "google 429 both",
		status:   429,
		header:   []string{"Retry-After: 50"},
		body:     `{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "46s"}]}}`,
		throttle: true,
		wait:     "50s Retry-After",
	},
	{
		name:     "google 429 garbage retryDelay",
		status:   429,
		body:     `{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "-3s"}]}}`,
		throttle: true,
		warnings: []string{`body: retryDelay "-3s" is not a duration; ignored`},
	},

	{
		// OpenAI's billing error, a 429 that no wait ends: no throttle.
		name:   "openai insufficient_quota",
		status: 429,
		header: []string{"Content-Type: application/json"},
		body:   `{"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}`,
		reason: "insufficient_quota ",
	},
	{
		name:   "openai credit_balance_exhausted",
		status: 429,
		body:   `{"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "code": "credit_balance_exhausted"}}`,
		reason: "credit_balance_exhausted ",
	},
	{
		// A rate limit's 429 that only mentions the word stays one.
		name:     "openai rate limit mentioning insufficient_quota",
		status:   429,
		header:   []string{"Retry-After: 2"},
		body:     `{"error": {"message": "Rate limit reached; not insufficient_quota.", "type": "requests", "code": "rate_limit_exceeded"}}`,
		throttle: true,
		wait:     "2s Retry-After",
	},

	// Shopify, HubSpot, Zendesk, Salesforce, Stripe.
	{
		name:   "shopify rest bucket",
		status: 200,
		header: []string{"X-Shopify-Shop-Api-Call-Limit: 32/40"},
		limits: []string{"- requests tenant q=40 r=8 w=20s reset=? shopify"},
	},
	{
		name:     "shopify rest 429",
		status:   429,
		header:   []string{"X-Shopify-Shop-Api-Call-Limit: 40/40", "Retry-After: 2.0"},
		throttle: true,
		wait:     "2s Retry-After",
		limits:   []string{"- requests tenant q=40 r=0 w=20s reset=? shopify"},
	},
	{
		name:   "shopify graphql cost",
		status: 200,
		body:   `{"data":{"shop":{"name":"x"}},"extensions":{"cost":{"requestedQueryCost":252,"actualQueryCost":12,"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":988.0,"restoreRate":50.0}}}}`,
		limits: []string{"graphql-cost points - q=1000 r=988 w=20s reset=? shopify cost=252"},
	},
	{
		name:     "shopify graphql throttled",
		status:   200,
		body:     `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}],"extensions":{"cost":{"requestedQueryCost":252,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":12.0,"restoreRate":50.0}}}}`,
		throttle: true,
		wait:     "4.8s body:extensions.cost",
		limits:   []string{"graphql-cost points - q=1000 r=12 w=20s reset=? shopify cost=252"},
	},
	{
		name:   "hubspot",
		status: 200,
		header: []string{"X-HubSpot-RateLimit-Daily: 500000", "X-HubSpot-RateLimit-Daily-Remaining: 499999", "X-HubSpot-RateLimit-Interval-Milliseconds: 10000", "X-HubSpot-RateLimit-Max: 100", "X-HubSpot-RateLimit-Remaining: 99", "X-HubSpot-RateLimit-Secondly: 10", "X-HubSpot-RateLimit-Secondly-Remaining: 9"},
		limits: []string{
			"daily requests - q=500000 r=499999 w=24h0m0s reset=? hubspot",
			"interval requests - q=100 r=99 w=10s reset=? hubspot",
			"secondly requests - q=10 r=9 w=1s reset=? hubspot",
		},
	},
	{
		name:   "zendesk counts its two spellings once",
		status: 200,
		header: []string{"x-rate-limit: 700", "ratelimit-limit: 700", "x-rate-limit-remaining: 699", "ratelimit-remaining: 699", "ratelimit-reset: 41", "zendesk-ratelimit-tickets-index: total=100; remaining=99; resets=41"},
		limits: []string{
			"- requests - q=700 r=699 w=1m0s reset=+41s ietf-separate",
			"tickets-index requests - q=100 r=99 w=1m0s reset=+41s zendesk",
		},
	},
	{
		// Kong's rate-limiting-advanced plugin (its handler.lua): one pair of
		// fields per window it counts, and the IETF draft's fields for the
		// nearest limit, whose reset goes to it.
		name:   "kong rate-limiting, two periods and the draft's fields",
		status: 200,
		header: []string{"X-RateLimit-Limit-Second: 5", "X-RateLimit-Remaining-Second: 4", "X-RateLimit-Limit-Minute: 100", "X-RateLimit-Remaining-Minute: 99",
			"RateLimit-Limit: 5", "RateLimit-Remaining: 4", "RateLimit-Reset: 1"},
		limits: []string{
			"minute requests - q=100 r=99 w=1m0s reset=? x-ratelimit",
			"second requests - q=5 r=4 w=1s reset=+1s x-ratelimit",
		},
	},
	{
		// Kong's rate-limiting plugin (kong/plugins/rate-limiting/handler.lua):
		// X-RateLimit-Limit-<period> with the period in lower case.
		name:   "kong rate-limiting, one period",
		status: 200,
		header: []string{"x-ratelimit-limit-hour: 1000", "x-ratelimit-remaining-hour: 998"},
		limits: []string{"hour requests - q=1000 r=998 w=1h0m0s reset=? x-ratelimit"},
	},
	{
		// Kong's response-ratelimiting plugin's documented example.
		name:   "kong response-ratelimiting",
		status: 200,
		header: []string{"X-RateLimit-Limit-Videos-Second: 5", "X-RateLimit-Remaining-Videos-Second: 5", "X-RateLimit-Limit-Videos-Minute: 10", "X-RateLimit-Remaining-Videos-Minute: 9"},
		limits: []string{
			"videos-minute requests - q=10 r=9 w=1m0s reset=? x-ratelimit",
			"videos-second requests - q=5 r=5 w=1s reset=? x-ratelimit",
		},
	},
	{
		name:   "salesforce per-app usage",
		status: 200,
		header: []string{"Sforce-Limit-Info: api-usage=25/5000; per-app-api-usage=17/250(appName=sample-connected-app)"},
		limits: []string{
			"api-usage requests - q=5000 r=4975 w=24h0m0s reset=? salesforce",
			"per-app-api-usage requests app:sample-connected-app q=250 r=233 w=? reset=? salesforce",
		},
	},
	{
		name:   "salesforce over the daily limit",
		status: 200,
		header: []string{"Sforce-Limit-Info: api-usage=110018/100000; api-bursts=1/750"},
		limits: []string{
			"api-usage requests - q=100000 r=0 w=24h0m0s reset=? salesforce",
			"api-bursts requests - q=750 r=749 w=? reset=? salesforce",
		},
	},
	{
		name:     "stripe",
		status:   429,
		header:   []string{"Stripe-Rate-Limited-Reason: endpoint-rate"},
		throttle: true,
		reason:   "endpoint-rate endpoint",
	},

	// Status rules and malformed input.
	{
		name:     "503 with Retry-After is a throttle",
		status:   503,
		header:   []string{"Retry-After: Sun, 29 Nov 2026 12:02:00 GMT"},
		throttle: true,
		wait:     "2m0s Retry-After",
	},
	{
		name:   "503 without a wait is not",
		status: 503,
	},
	{
		name:     "503 with X-RateLimit-Reset is a throttle",
		status:   503,
		header:   []string{"X-RateLimit-Reset: 30"},
		throttle: true,
		wait:     "30s X-RateLimit-Reset",
		limits:   []string{"- requests - q=? r=? w=? reset=+30s x-ratelimit"},
	},
	{
		name:     "malformed Retry-After is reported",
		status:   429,
		header:   []string{"Retry-After: soon"},
		throttle: true,
		warnings: []string{`Retry-After: "soon" is neither a delay nor a date; ignored`},
	},
	{
		name:   "malformed counts are skipped, the rest is read",
		status: 200,
		header: []string{"X-RateLimit-Limit: 60", "X-RateLimit-Remaining: lots", "X-RateLimit-Reset: 500000000000"},
		limits: []string{"- requests - q=60 r=? w=? reset=? x-ratelimit"},
		warnings: []string{
			`X-RateLimit-Remaining: "lots" is not a count; ignored`,
			`X-RateLimit-Reset: "500000000000" is neither plausible epoch seconds nor epoch milliseconds; ignored`,
		},
	},
	{
		name:   "malformed structured members are skipped",
		status: 200,
		header: []string{`RateLimit: "a";r=-1;t=5, b;r=2, "c";r=x, 7, "d";r=3;t=4`},
		limits: []string{
			"b requests - q=? r=2 w=? reset=? ietf-structured",
			"d requests - q=? r=3 w=? reset=+4s ietf-structured",
		},
		warnings: []string{
			"RateLimit: parameter r is negative; member ignored",
			"RateLimit: parameter r is not a number; member ignored",
			"RateLimit: a member has no policy name; ignored",
		},
	},
	{
		name:     "negative and signed delays are refused",
		status:   429,
		header:   []string{"Retry-After: -5"},
		throttle: true,
		warnings: []string{`Retry-After: "-5" is neither a delay nor a date; ignored`},
	},
}

func TestParse(t *testing.T) {
	for _, tc := range slices.Concat(parseCases, classCases) {
		t.Run(tc.name, func(t *testing.T) {
			at := tc.at
			if at.IsZero() {
				at = now
			}
			o := Parse(tc.status, hdr(tc.header...), []byte(tc.body), at)
			if o.Status != tc.status {
				t.Errorf("Status = %d, want %d", o.Status, tc.status)
			}
			if o.Throttled != tc.throttle {
				t.Errorf("Throttled = %v, want %v", o.Throttled, tc.throttle)
			}
			wait := ""
			if o.HasRetryAfter {
				wait = o.RetryAfter.String() + " " + o.RetryAfterSource
			}
			if wait != tc.wait {
				t.Errorf("wait = %q, want %q", wait, tc.wait)
			}
			hint := ""
			if o.HasHint {
				hint = o.Hint.String() + " " + o.HintSource
			}
			if hint != tc.hint {
				t.Errorf("hint = %q, want %q", hint, tc.hint)
			}
			reason := ""
			if o.Reason != "" {
				reason = o.Reason + " " + o.ReasonScope
			}
			if reason != tc.reason {
				t.Errorf("reason = %q, want %q", reason, tc.reason)
			}
			var limits []string
			for _, l := range o.Limits {
				limits = append(limits, describe(l, at))
			}
			if !slices.Equal(limits, tc.limits) {
				t.Errorf("Limits =\n\t%s\nwant\n\t%s", strings.Join(limits, "\n\t"), strings.Join(tc.limits, "\n\t"))
			}
			if !slices.Equal(o.Warnings, tc.warnings) {
				t.Errorf("Warnings =\n\t%s\nwant\n\t%s", strings.Join(o.Warnings, "\n\t"), strings.Join(tc.warnings, "\n\t"))
			}
		})
	}
}

func TestNearLimit(t *testing.T) {
	o := Parse(200, hdr("X-RateLimit-NearLimit: true"), nil, now)
	if !o.NearLimit {
		t.Errorf("NearLimit = false, want true")
	}
}

func TestParseIntoReuses(t *testing.T) {
	var o Observation
	ParseInto(&o, 429, hdr(parseCases[10].header...), nil, now)
	ParseInto(&o, 200, hdr("X-RateLimit-Limit: 5"), nil, now)
	if o.Throttled || o.HasRetryAfter || o.Reason != "" || len(o.Limits) != 1 || len(o.Warnings) != 0 {
		t.Errorf("ParseInto kept state from the previous response: %+v", o)
	}
}

func TestCanonicalKeys(t *testing.T) {
	for _, k := range []string{
		keyRetryAfter, keyRateLimit, keyRateLimitPolicy, keyBetaRateLimit, keyBetaRateLimitPolicy,
		keyRateLimitReason, keyRateLimitLimit, keyRateLimitRemaining, keyRateLimitReset,
		keyRateLimitResetTime, keyRateLimitName, keyShopify, keySalesforce, keyStripeReason,
		keyRetryAfterMs, keyMsRetryAfterMs, keyRateLimitPartition, prefixZendesk, prefixUnified + "X",
		prefixKongLimit + "X", prefixKongRemaining + "X", keyRetryAfterSeconds, keyXRetryAfter,
	} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("CanonicalHeaderKey(%q) = %q, want it unchanged", k, c)
		}
	}
}

// A reset stated as a delay (Discord's X-RateLimit-Reset-After, and its
// milliseconds form, and X-RateLimit-Reset when it counts seconds, as
// @fastify/rate-limit's does) is marked ResetIsDelay, which takes no
// clock-skew allowance; an epoch reset is not. X-RateLimit-Reset's seconds
// are also marked ResetSeconds, since such servers round them up;
// Discord's Reset-After, to the millisecond, is not, even beside one.
func TestResetIsDelay(t *testing.T) {
	at := time.Unix(1470173022, 0)
	for _, tc := range []struct {
		name           string
		header         http.Header
		delay, seconds bool
	}{
		{"Reset-After", http.Header{"X-Ratelimit-Limit": {"5"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1470173023"}, "X-Ratelimit-Reset-After": {"1"}}, true, false},
		{"Reset-After over seconds", http.Header{"X-Ratelimit-Limit": {"5"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1"}, "X-Ratelimit-Reset-After": {"0.872"}}, true, false},
		{"epoch Reset", http.Header{"X-Ratelimit-Limit": {"5"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1470173023"}}, false, false},
		{"fastify seconds", http.Header{"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"1"}}, true, true},
		{"Reset-Ms delay", http.Header{"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"1"}, "X-Ratelimit-Reset-Ms": {"640"}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := Parse(200, tc.header, nil, at)
			if len(obs.Limits) != 1 {
				t.Fatalf("limits = %+v, want one", obs.Limits)
			}
			if got := obs.Limits[0].Has(ResetIsDelay); got != tc.delay {
				t.Errorf("ResetIsDelay = %v, want %v", got, tc.delay)
			}
			if got := obs.Limits[0].Has(ResetSeconds); got != tc.seconds {
				t.Errorf("ResetSeconds = %v, want %v", got, tc.seconds)
			}
		})
	}
}

// A Retry-After to a fraction of a second (rate-limiter-flexible's users
// write msBeforeNext / 1000) states the turn that a reset in whole seconds
// beside it rounds, up (Math.ceil of epoch seconds) or down (JavaScript's
// Date.toString): the reset is taken from it, on a refusal and, where it
// is sent on every answer, on a success. A Retry-After in whole seconds, a
// date, or a reset more than a second from it leaves the reset alone.
func TestPreciseRetryAfterRefinesAWholeSecondReset(t *testing.T) {
	now := time.Date(2026, 12, 4, 20, 52, 50, 142_000_000, time.UTC)
	epoch := func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	turn := now.Add(756 * time.Millisecond) // 20:52:50.898
	for _, tc := range []struct {
		name    string
		status  int
		h       http.Header
		want    time.Time
		refined bool
	}{
		{"429, epoch rounded up", 429, http.Header{"Retry-After": {"0.756"}, "X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(turn.Add(time.Second))}}, turn, true},
		{"200, Date.toString truncated", 200, http.Header{"Retry-After": {"0.756"}, "X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"4"}, "X-Ratelimit-Reset": {"Fri Dec 04 2026 20:52:50 GMT+0000 (Coordinated Universal Time)"}}, turn, true},
		{"whole Retry-After", 429, http.Header{"Retry-After": {"1"}, "X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(turn.Add(time.Second))}}, time.Unix(turn.Add(time.Second).Unix(), 0), false},
		{"reset far from it", 429, http.Header{"Retry-After": {"0.756"}, "X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(now.Add(5 * time.Second))}}, time.Unix(now.Add(5*time.Second).Unix(), 0), false},
		{"date Retry-After", 429, http.Header{"Retry-After": {"Fri, 04 Dec 2026 20:52:51 GMT"}, "X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(turn.Add(time.Second))}}, time.Unix(turn.Add(time.Second).Unix(), 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := Parse(tc.status, tc.h, nil, now)
			if len(obs.Limits) != 1 {
				t.Fatalf("limits = %+v, want one", obs.Limits)
			}
			l := obs.Limits[0]
			if !l.Reset.Equal(tc.want) {
				t.Errorf("reset %v, want %v", l.Reset.Format(time.StampMilli), tc.want.Format(time.StampMilli))
			}
			if got := l.Has(ResetIsDelay); got != tc.refined {
				t.Errorf("ResetIsDelay = %v, want %v", got, tc.refined)
			}
		})
	}
}

// @nestjs/throttler suffixes every field of a throttler not named
// "default" with its name: each such throttler is a limit of that name,
// its reset the seconds to it, and a refusal's only field, Retry-After-
// <name>, its wait (the longest of several). Kong's periods and OpenAI's
// requests and tokens keep their own readings.
func TestSuffixedLimits(t *testing.T) {
	now := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	obs := Parse(200, http.Header{
		"X-Ratelimit-Limit-Short": {"3"}, "X-Ratelimit-Remaining-Short": {"2"}, "X-Ratelimit-Reset-Short": {"1"},
		"X-Ratelimit-Limit-Long": {"20"}, "X-Ratelimit-Remaining-Long": {"19"}, "X-Ratelimit-Reset-Long": {"10"},
	}, nil, now)
	if len(obs.Limits) != 2 {
		t.Fatalf("limits %+v, want two", obs.Limits)
	}
	for i, want := range []struct {
		name             string
		quota, remaining float64
		reset            time.Duration
	}{{"long", 20, 19, 10 * time.Second}, {"short", 3, 2, time.Second}} {
		l := obs.Limits[i]
		if l.Name != want.name || l.Quota != want.quota || l.Remaining != want.remaining || l.Reset.Sub(now) != want.reset ||
			!l.Has(ResetIsDelay|ResetSeconds) || l.Has(HasWindow) {
			t.Errorf("limit %d: %+v, want %s: %v of %v, reset in %v, a rounded delay, no window", i, l, want.name, want.remaining, want.quota, want.reset)
		}
	}
	refused := Parse(429, http.Header{"Retry-After-Short": {"1"}, "Retry-After-Long": {"7"}}, nil, now)
	if !refused.Throttled || !refused.HasRetryAfter || refused.RetryAfter != 7*time.Second || refused.RetryAfterSource != "Retry-After-Long" {
		t.Errorf("refusal: throttled %v, wait %v from %q, want 7s from Retry-After-Long", refused.Throttled, refused.RetryAfter, refused.RetryAfterSource)
	}
	// A plain Retry-After wins: it speaks for the whole response.
	if both := Parse(429, http.Header{"Retry-After": {"2"}, "Retry-After-Short": {"1"}}, nil, now); both.RetryAfter != 2*time.Second {
		t.Errorf("Retry-After and Retry-After-Short: wait %v, want 2s", both.RetryAfter)
	}
	kong := Parse(200, http.Header{"X-Ratelimit-Limit-Minute": {"10"}, "X-Ratelimit-Remaining-Minute": {"9"}}, nil, now)
	openai := Parse(200, http.Header{"X-Ratelimit-Limit-Requests": {"60"}, "X-Ratelimit-Remaining-Requests": {"59"}, "X-Ratelimit-Reset-Requests": {"1s"}}, nil, now)
	if len(kong.Limits) != 1 || kong.Limits[0].Name != "minute" || len(openai.Limits) != 1 || openai.Limits[0].Dialect != OpenAI {
		t.Errorf("Kong %+v, OpenAI %+v: want their own readings", kong.Limits, openai.Limits)
	}
}

// A wait stated as an instant on the server's clock needs an allowance
// for the clocks' difference; one stated as a delay needs none
// (Observation.RetryAfterInstant).
func TestRetryAfterInstant(t *testing.T) {
	epoch := strconv.FormatInt(now.Add(30*time.Second).Unix(), 10)
	for _, tc := range []struct {
		name    string
		header  []string
		body    string
		instant bool
	}{
		{"Retry-After seconds", []string{"Retry-After: 5"}, "", false},
		{"Retry-After date", []string{"Retry-After: Sun, 29 Nov 2026 12:00:05 GMT"}, "", true},
		{"retry-after-ms", []string{"retry-after-ms: 1500"}, "", false},
		{"X-RateLimit-Reset in epoch seconds", []string{"X-RateLimit-Limit: 10", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: " + epoch}, "", true},
		{"Discord's X-RateLimit-Reset-After", []string{"X-RateLimit-Limit: 5", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset-After: 1.5"}, "", false},
		{"X-RateLimit-Retry-After seconds", []string{"X-RateLimit-Retry-After: 40"}, "", false},
		{"X-RateLimit-Retry-After date", []string{"X-RateLimit-Retry-After: Sun, 29 Nov 2026 12:00:40 GMT"}, "", true},
		{"X-Retry-In", []string{"X-Retry-In: 1.2s"}, "", false},
		{"Discord's body", nil, `{"retry_after": 2.5}`, false},
		{"Google's body", nil, `{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]}}`, false},
	} {
		o := Parse(429, hdr(tc.header...), []byte(tc.body), now)
		if !o.HasRetryAfter || o.RetryAfterInstant != tc.instant {
			t.Errorf("%s: HasRetryAfter %v (%v from %s), RetryAfterInstant %v; want a wait, instant %v",
				tc.name, o.HasRetryAfter, o.RetryAfter, o.RetryAfterSource, o.RetryAfterInstant, tc.instant)
		}
	}
}

// A wait the IETF drafts state as a delay (t=, reset=, RateLimit-Reset
// in seconds) is no instant on the server's clock, and needs no allowance
// for the clocks' difference; one in epoch seconds (GitLab's) is one.
func TestIETFWaitInstant(t *testing.T) {
	now := time.Unix(1609844400-30, 0)
	for _, c := range []struct {
		name    string
		header  []string
		instant bool
	}{
		{"structured t", []string{`RateLimit-Policy: "api";q=500;w=300`, `RateLimit: "api";r=0;t=55`}, false},
		{"draft 7", []string{"RateLimit: limit=10, remaining=0, reset=5"}, false},
		{"separate", []string{"RateLimit-Limit: 10", "RateLimit-Remaining: 0", "RateLimit-Reset: 5"}, false},
		{"separate epoch", []string{"RateLimit-Limit: 60", "RateLimit-Remaining: 0", "RateLimit-Reset: 1609844400"}, true},
		{"structured epoch", []string{`RateLimit-Policy: "api";q=500;w=300`, `RateLimit: "api";r=0;t=1609844400`}, true},
	} {
		h := http.Header{}
		for _, kv := range c.header {
			k, v, _ := strings.Cut(kv, ": ")
			h.Add(k, v)
		}
		o := Parse(http.StatusTooManyRequests, h, nil, now)
		if !o.HasRetryAfter || o.RetryAfterInstant != c.instant {
			t.Errorf("%s: wait %v (%v), instant %v; want a wait, instant %v", c.name, o.RetryAfter, o.HasRetryAfter, o.RetryAfterInstant, c.instant)
		}
	}
}
