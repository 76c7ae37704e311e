package sim

import (
	"net/http"
	"strings"
	"time"
)

// Presets of servers built to be unlike the providers' profiles: many
// routes on one host, each with a limiter of its own and a header style of
// its own, per-location leaky buckets, short ids, a large hourly quota and a
// reset rounded up. Each returns a fresh Config; the routes' limits are
// keyed with [RouteKey] or [SharedKey], so that [Truth.Scopes] has one
// entry per route (Key "tenant /prefix/") or per shared counter. Change
// the Config's fields as needed (Latency, Seed, Faults).

// RouteKey returns a Key for a PerKey limit kept per route: the requests
// whose path starts with prefix share one instance, named prefix.
func RouteKey(prefix string) func(*Request) string {
	return func(r *Request) string {
		if strings.HasPrefix(r.Path, prefix) {
			return prefix
		}
		return ""
	}
}

// SharedKey returns a Key for a PerKey limit that the requests under any
// of prefixes share: one instance, named name.
func SharedKey(name string, prefixes ...string) func(*Request) string {
	return func(r *Request) string {
		for _, p := range prefixes {
			if strings.HasPrefix(r.Path, p) {
				return name
			}
		}
		return ""
	}
}

// route returns a fixed-window limit of quota per window on the requests
// under prefix, speaking d.
func route(name, prefix string, d Dialect, quota float64, window time.Duration) Limit {
	return Limit{Name: name, Kind: FixedWindow, Per: PerKey, Key: RouteKey(prefix),
		Quota: quota, Window: window, Dialect: d}
}

// MultiRoute is one host with six routes, each with its own fixed-window
// limiter and its own dialect, 46.5 requests per second in all:
//
//	/v1/a/  draft-6                     10 per 1s   "a"
//	/v1/b/  draft-7                     20 per 2s   "b"
//	/v1/c/  draft-8 "5-in-10sec"         5 per 10s
//	/v1/d/  X-RateLimit-*, epoch reset  30 per 5s   "d"
//	/v1/e/  Retry-After on a 429 only   10 per 1s   "e"
//	/v1/f/  nothing, a bare 429         10 per 1s   "f"
//
// Responses take 20ms.
func MultiRoute(seed int64) Config {
	return Config{Provider: IETF, Seed: seed, Latency: 20 * time.Millisecond, Limits: []Limit{
		route("a", "/v1/a/", Draft6, 10, time.Second),
		route("b", "/v1/b/", Draft7, 20, 2*time.Second),
		route("5-in-10sec", "/v1/c/", Draft8, 5, 10*time.Second),
		route("d", "/v1/d/", XRateLimit, 30, 5*time.Second),
		route("e", "/v1/e/", RetryAfterOnly, 10, time.Second),
		route("f", "/v1/f/", Bare, 10, time.Second),
	}}
}

// SharedPolicy is one host, draft-8 everywhere, 40 requests per second in
// all: /v2/p/ and /v2/q/ report the same policy name, "10-in-1sec", but
// each has its own counter of 10 per second; /v2/s/ and /v2/t/ report
// "20-in-1sec" and really share one counter of 20 per second (Key
// "shared"). Responses take 20ms.
func SharedPolicy(seed int64) Config {
	return Config{Provider: IETF, Seed: seed, Latency: 20 * time.Millisecond, Limits: []Limit{
		route("10-in-1sec", "/v2/p/", Draft8, 10, time.Second),
		route("10-in-1sec", "/v2/q/", Draft8, 10, time.Second),
		{Name: "20-in-1sec", Kind: FixedWindow, Per: PerKey, Key: SharedKey("shared", "/v2/s/", "/v2/t/"),
			Quota: 20, Window: time.Second, Dialect: Draft8},
	}}
}

// LeakyRoutes is a reverse proxy with nginx limit_req per location and no
// header at all, 35 requests per second in all:
//
//	/loc/a/  rate=10r/s burst=5   503 (limit_req_status's default)
//	/loc/b/  rate=5r/s  burst=10  429
//	/loc/c/  rate=20r/s no burst  429
//
// Without nodelay, nginx holds each request of a burst until its turn at
// the rate; with it, the burst is served at once. Responses take 20ms.
func LeakyRoutes(seed int64, nodelay bool) Config {
	leaky := func(name, prefix string, rate, burst float64, status int) Limit {
		return Limit{Name: name, Kind: LeakyBucket, Per: PerKey, Key: RouteKey(prefix),
			Quota: rate, Window: time.Second, Burst: burst, NoDelay: nodelay, Dialect: Bare, Status: status}
	}
	return Config{Provider: Silent, Seed: seed, Latency: 20 * time.Millisecond, Limits: []Limit{
		leaky("a", "/loc/a/", 10, 5, http.StatusServiceUnavailable),
		leaky("b", "/loc/b/", 5, 10, http.StatusTooManyRequests),
		leaky("c", "/loc/c/", 20, 0, http.StatusTooManyRequests),
	}}
}

// ShortIDs has ids of one and two digits in its paths under two limiters,
// each keyed by its route template: /items/{n} (draft-6, 20 per second in
// a fixed window) and /things/{n} (silent, a token bucket of 10 per second
// with a bare 429). Responses take 20ms.
func ShortIDs(seed int64) Config {
	return Config{Provider: IETF, Seed: seed, Latency: 20 * time.Millisecond, Limits: []Limit{
		route("items", "/items/", Draft6, 20, time.Second),
		{Name: "things", Per: PerKey, Key: RouteKey("/things/"), Quota: 10, Window: time.Second, Dialect: Bare},
	}}
}

// SkewedClock is a server whose clock is offset seconds off the real one
// (negative: behind): /v1/win/ has 10 requests per second in a fixed
// window on real time, reported as X-RateLimit-* with the reset in epoch
// seconds of its own clock, with its Date on that clock too. Read on the
// client's clock, the resets of a clock 3 s behind lie 3 s in the past, and
// those of one ahead seconds in the future. Responses take 20ms.
func SkewedClock(seed int64, offset time.Duration) Config {
	return Config{Provider: IETF, Seed: seed, Latency: 20 * time.Millisecond, ClockOffset: offset, Limits: []Limit{
		route("win", "/v1/win/", XRateLimit, 10, time.Second),
	}}
}

// HourlyQuota is a GitHub-like API: /repos/ has 5000 requests per hour in a
// fixed window, reported on every response as X-RateLimit-Limit: 5000,
// X-RateLimit-Remaining counting down and X-RateLimit-Reset an hour ahead
// in epoch seconds. Responses take 50ms.
func HourlyQuota(seed int64) Config {
	return Config{Provider: GitHub, Seed: seed, Latency: 50 * time.Millisecond, Limits: []Limit{
		route("core", "/repos/", XRateLimit, 5000, time.Hour),
	}}
}

// RoundedReset is a short fixed window, 10 per second on /v1/short/, whose
// draft-6 RateLimit-Reset is rounded up to whole seconds: 1 while 0.3s
// are really left. Responses take 20ms.
func RoundedReset(seed int64) Config {
	return Config{Provider: IETF, Seed: seed, Latency: 20 * time.Millisecond, Limits: []Limit{
		route("short", "/v1/short/", Draft6, 10, time.Second),
	}}
}

// FloatingReset is RoundedReset with the window express-rate-limit's
// memory store keeps: 10 per second on /v1/float/, in an ExpiryWindow that
// opens with the first request after the last one ended, and a draft-6
// RateLimit-Reset rounded up to whole seconds. Responses take 20ms.
func FloatingReset(seed int64) Config {
	return Config{Provider: IETF, Seed: seed, Latency: 20 * time.Millisecond, Limits: []Limit{
		{Name: "float", Kind: ExpiryWindow, Per: PerKey, Key: RouteKey("/v1/float/"), Quota: 10, Window: time.Second, Dialect: Draft6},
	}}
}

// ExpressLike is the server of bench/testdata/express/server.js in the
// simulator: one express-rate-limit limiter per route, each an
// ExpiryWindow, 165.5 requests per second in all:
//
//	/d6/      draft-6                     10 per 1s
//	/d7/      draft-7                     20 per 2s
//	/d8/      draft-8 "5-in-10sec"         5 per 10s
//	/d8b/     draft-8 "10-in-1sec"        10 per 1s
//	/d8c/     draft-8 "10-in-1sec"        10 per 1s, a counter of its own
//	/legacy/  X-RateLimit-*, epoch reset  10 per 1s
//	/bare/    nothing, a bare 429         10 per 1s
//	/s1/ /s2/ draft-8 "20-in-1sec"        20 per 1s, one counter (Key "shared")
//	/l1/ /l2/ X-RateLimit-*, epoch reset  20 per 1s, one counter (Key "sharedLegacy")
//	/lo/      X-RateLimit-*, epoch reset  20 per 1s
//
// Responses take 1ms, as over loopback.
func ExpressLike(seed int64) Config {
	w := func(name, prefix string, d Dialect, quota float64, window time.Duration) Limit {
		return Limit{Name: name, Kind: ExpiryWindow, Per: PerKey, Key: RouteKey(prefix), Quota: quota, Window: window, Dialect: d}
	}
	return Config{Provider: IETF, Seed: seed, Latency: time.Millisecond, Limits: []Limit{
		w("d6", "/d6/", Draft6, 10, time.Second),
		w("d7", "/d7/", Draft7, 20, 2*time.Second),
		w("5-in-10sec", "/d8/", Draft8, 5, 10*time.Second),
		w("10-in-1sec", "/d8b/", Draft8, 10, time.Second),
		w("10-in-1sec", "/d8c/", Draft8, 10, time.Second),
		w("legacy", "/legacy/", XRateLimit, 10, time.Second),
		w("bare", "/bare/", Bare, 10, time.Second),
		{Name: "20-in-1sec", Kind: ExpiryWindow, Per: PerKey, Key: SharedKey("shared", "/s1/", "/s2/"),
			Quota: 20, Window: time.Second, Dialect: Draft8},
		{Name: "sharedLegacy", Kind: ExpiryWindow, Per: PerKey, Key: SharedKey("sharedLegacy", "/l1/", "/l2/"),
			Quota: 20, Window: time.Second, Dialect: XRateLimit},
		w("lo", "/lo/", XRateLimit, 20, time.Second),
	}}
}

// LongWindows is one host whose routes say nothing (a bare 429) and count
// over windows of many seconds, as HAProxy's stick tables and many
// middlewares are configured, 4.33 requests per second in all:
//
//	/w10/  fixed window     20 per 10s
//	/w60/  fixed window     60 per minute
//	/s10/  sliding window   20 per 10s, refused requests counted too
//
// Responses take 20ms.
func LongWindows(seed int64) Config {
	return Config{Provider: Silent, Seed: seed, Latency: 20 * time.Millisecond, Limits: []Limit{
		route("w10", "/w10/", Bare, 20, 10*time.Second),
		route("w60", "/w60/", Bare, 60, time.Minute),
		{Name: "s10", Kind: SlidingWindow, Per: PerKey, Key: RouteKey("/s10/"), Quota: 20, Window: 10 * time.Second,
			Dialect: Bare, CountRefused: true},
	}}
}

// StickTables is HAProxy's stick-table rate limiting (bench's
// TestThirdPartyHAProxy) in the simulator: per route a sliding estimate of
// the request rate over a period that counts every request, refused ones
// too, and a bare 429 over the limit (/h3/: a Retry-After of 1), 52
// requests per second in all:
//
//	/h1/       10 per 1s
//	/h2/       20 per 10s
//	/h3/       10 per 1s, Retry-After: 1
//	/h4/ /h5/  20 per 1s, one table (Key "h45")
//
// Responses take 1ms, as over loopback.
func StickTables(seed int64) Config {
	st := func(name string, key func(*Request) string, quota float64, window, retryAfter time.Duration) Limit {
		d := Bare
		if retryAfter > 0 {
			d = RetryAfterOnly
		}
		return Limit{Name: name, Kind: SlidingWindow, Per: PerKey, Key: key, Quota: quota, Window: window,
			Dialect: d, RetryAfter: retryAfter, CountRefused: true}
	}
	return Config{Provider: Silent, Seed: seed, Latency: time.Millisecond, Limits: []Limit{
		st("h1", RouteKey("/h1/"), 10, time.Second, 0),
		st("h2", RouteKey("/h2/"), 20, 10*time.Second, 0),
		st("h3", RouteKey("/h3/"), 10, time.Second, time.Second),
		st("h45", SharedKey("h45", "/h4/", "/h5/"), 20, time.Second, 0),
	}}
}

// SlidingRoutes is go-chi/httprate (bench's TestThirdPartyHTTPRate) in the
// simulator: three routes, each a sliding window counter of its own
// (SlidingWindow) whose windows turn 400ms into the clock's seconds,
// X-RateLimit-* with the reset as the current window's end in epoch
// seconds, truncated, and a Retry-After of the whole window on a 429,
// 23 requests per second in all:
//
//	/a/  10 per 1s
//	/b/  20 per 2s
//	/c/  30 per 10s
//
// Responses take 1ms, as over loopback.
func SlidingRoutes(seed int64) Config {
	w := func(name, prefix string, quota float64, window time.Duration) Limit {
		return Limit{Name: name, Kind: SlidingWindow, Per: PerKey, Key: RouteKey(prefix), Quota: quota, Window: window,
			Dialect: XRateLimit, RetryAfter: window, Offset: 400 * time.Millisecond, ResetFloor: true}
	}
	return Config{Provider: IETF, Seed: seed, Latency: time.Millisecond, Limits: []Limit{
		w("a", "/a/", 10, time.Second),
		w("b", "/b/", 20, 2*time.Second),
		w("c", "/c/", 30, 10*time.Second),
	}}
}
