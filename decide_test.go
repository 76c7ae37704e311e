package heed

import (
	"testing"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/learn"
	"github.com/heedhttp/heed/store"
)

// Each rule of decide, one row: what a response makes heed do.
func TestDecide(t *testing.T) {
	keys := &learn.Request{
		Global:       "global",
		Tenant:       "https://acme.atlassian.net",
		Endpoint:     "https://acme.atlassian.net GET /rest/api/3/search",
		Resource:     "https://acme.atlassian.net key:PROJ-1",
		UnknownScope: header.ScopeEndpoint,
	}
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	throttle := func(ra time.Duration, reasonScope string) header.Observation {
		return header.Observation{Throttled: true, RetryAfter: ra, HasRetryAfter: ra > 0, ReasonScope: reasonScope, Reason: reasonScope}
	}
	for _, tc := range []struct {
		name       string
		status     int
		obs        header.Observation
		rand       float64
		widened    string
		bareBlock  time.Duration // learning's block for a bare 429
		bareRetry  bool          // learning's block is the request's wait too
		blockFor   time.Duration // the block, when not Delay
		noRetry    bool          // the request is not safe to repeat
		attempt    int
		deadline   time.Duration // from now; zero for none
		backoffMax time.Duration // the Transport's BackoffMax; zero for the default
		want       decision
	}{
		{name: "200 is returned", status: 200, want: decision{}},
		{name: "503 without a wait is returned", status: 503, want: decision{}},
		{
			name: "429 waits Retry-After", status: 429, obs: throttle(5*time.Second, ""),
			want: decision{Throttled: true, Retry: true, Delay: 5 * time.Second},
		},
		{
			name: "429 without a wait waits the 1s floor", status: 429, obs: throttle(0, ""),
			want: decision{Throttled: true, Retry: true, Delay: time.Second},
		},
		{
			name: "a wait stated as an instant (a Retry-After date) gets the clock skew", status: 429,
			obs:  header.Observation{Throttled: true, RetryAfter: 5 * time.Second, HasRetryAfter: true, RetryAfterInstant: true},
			want: decision{Throttled: true, Retry: true, Delay: 5*time.Second + DefaultClockSkew},
		},
		{
			name: "jitter is added to the server's wait", status: 429, obs: throttle(5*time.Second, ""), rand: 0.5,
			// backoff(0) with rand 0.5 is 1s, below 5s + 250ms of jitter.
			want: decision{Throttled: true, Retry: true, Delay: 5*time.Second + 250*time.Millisecond},
		},
		{
			name: "jitter is at most a tenth of a short wait", status: 429, obs: throttle(time.Second, ""), rand: 0.5,
			// backoff(0) with rand 0.5 is 1s; 1s + half of 100ms is above it.
			want: decision{Throttled: true, Retry: true, Delay: time.Second + 50*time.Millisecond},
		},
		{
			name: "the backoff floor grows with attempts", status: 429, obs: throttle(time.Second, ""), rand: 0.5, attempt: 3,
			// 2s << 3 = 16s, half of it: 8s, above 1s + 250ms.
			want: decision{Throttled: true, Retry: true, Delay: 8 * time.Second, Event: LimitedEvent{Attempt: 3}},
		},
		{
			name: "a wait beyond MaxWait is not retried, but blocks", status: 429, obs: throttle(2*time.Hour, ""),
			want: decision{Throttled: true, Delay: 2 * time.Hour},
		},
		{
			name: "an absurd wait is clamped to a day", status: 429, obs: throttle(400*time.Hour, ""),
			want: decision{Throttled: true, Delay: 24 * time.Hour},
		},
		{
			name: "retries used up", status: 429, obs: throttle(time.Second, ""), attempt: DefaultMaxRetries,
			want: decision{Throttled: true, Delay: time.Second, Event: LimitedEvent{Attempt: DefaultMaxRetries}},
		},
		{
			name: "not safe to repeat", status: 429, obs: throttle(time.Second, ""), noRetry: true,
			want: decision{Throttled: true, Delay: time.Second},
		},
		{
			name: "a delay past the deadline is not retried", status: 429, obs: throttle(10*time.Second, ""), deadline: 5 * time.Second,
			want: decision{Throttled: true, Delay: 10 * time.Second},
		},
		{
			name: "503 with a wait is retried", status: 503, obs: throttle(2*time.Second, ""),
			want: decision{Throttled: true, Retry: true, Delay: 2 * time.Second},
		},
		{
			name: "the server's global scope is blocked", status: 429, obs: throttle(30*time.Second, header.ScopeGlobal),
			want: decision{Throttled: true, Retry: true, Delay: 30 * time.Second},
		},
		{
			name: "the server's tenant scope is blocked", status: 429, obs: throttle(30*time.Second, header.ScopeTenant),
			want: decision{Throttled: true, Retry: true, Delay: 30 * time.Second},
		},
		{
			name: "the resource is blocked", status: 429, obs: throttle(time.Second, header.ScopeKey),
			want: decision{Throttled: true, Retry: true, Delay: time.Second},
		},
		{
			// and the endpoint's own, which its requests admitted before
			// the hypothesis check.
			name: "a bare 429 taken for a shared limit blocks the shared scope and its own", status: 429, obs: throttle(time.Second, ""), widened: "https://acme.atlassian.net limit:unknown",
			want: decision{Throttled: true, Retry: true, Delay: time.Second, Own: store.Block{Key: keys.Endpoint, For: time.Second}},
		},
		{
			// With no wait mandated, the hypothesis alone decides.
			name: "a bare 429 with no Retry-After taken for a shared limit blocks only the shared scope", status: 429, obs: throttle(0, ""), widened: "https://acme.atlassian.net limit:unknown",
			want: decision{Throttled: true, Retry: true, Delay: time.Second},
		},
		{
			name:   "a bare 429 on a scope AIMD paces blocks it for learning's intervals; the request still waits 1s",
			status: 429, obs: throttle(0, ""), bareBlock: 200 * time.Millisecond, blockFor: 200 * time.Millisecond,
			want: decision{Throttled: true, Retry: true, Delay: time.Second},
		},
		{
			name: "a Retry-After is never shortened by learning's bare block", status: 429, obs: throttle(5*time.Second, ""),
			bareBlock: 200 * time.Millisecond,
			want:      decision{Throttled: true, Retry: true, Delay: 5 * time.Second},
		},
		{
			name:   "a bare 429 of a limiter with no burst: the request waits learning's interval too",
			status: 429, obs: throttle(0, ""), bareBlock: 50 * time.Millisecond, bareRetry: true,
			want: decision{Throttled: true, Retry: true, Delay: 50 * time.Millisecond},
		},
		{
			name:   "a bare 429 in a long run blocks the scope as long as learning says; the request still waits 1s",
			status: 429, obs: throttle(0, ""), bareBlock: 20 * time.Second, blockFor: 20 * time.Second,
			want: decision{Throttled: true, Retry: true, Delay: time.Second},
		},
		{
			name:   "no longer than the Transport's BackoffMax",
			status: 429, obs: throttle(0, ""), bareBlock: 20 * time.Second, blockFor: 5 * time.Second, backoffMax: 5 * time.Second,
			want: decision{Throttled: true, Retry: true, Delay: time.Second},
		},
		{
			name: "nor by learning's interval of a limiter with no burst", status: 429, obs: throttle(5*time.Second, ""),
			bareBlock: 50 * time.Millisecond, bareRetry: true,
			want: decision{Throttled: true, Retry: true, Delay: 5 * time.Second},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := retryPolicy{maxRetries: DefaultMaxRetries, maxWait: DefaultMaxWait, skew: DefaultClockSkew,
				backoffBase: DefaultBackoffBase, backoffMax: DefaultBackoffMax, rand: func() float64 { return tc.rand }}
			if tc.backoffMax > 0 {
				p.backoffMax = tc.backoffMax
			}
			in := decideInput{status: tc.status, obs: &tc.obs, keys: keys, widened: tc.widened,
				bareBlock: tc.bareBlock, bareRetry: tc.bareRetry, canRetry: !tc.noRetry, attempt: tc.attempt, now: now}
			if tc.deadline > 0 {
				in.deadline = now.Add(tc.deadline)
			}
			want := tc.want
			if want.Throttled {
				// The scope blocked follows from the row: the server's, the
				// tenant when widened, else the endpoint.
				scope := keys.Endpoint
				switch {
				case tc.widened != "":
					scope = tc.widened
				case tc.obs.ReasonScope == header.ScopeTenant:
					scope = keys.Tenant
				case tc.obs.ReasonScope == header.ScopeGlobal:
					scope = keys.Global
				case tc.obs.ReasonScope == header.ScopeKey:
					scope = keys.Resource
				}
				want.Block.Key, want.Block.For = scope, want.Delay
				if tc.blockFor > 0 {
					want.Block.For = tc.blockFor
				}
				want.Event.StatusCode, want.Event.Scope = tc.status, scope
				want.Event.Reason, want.Event.RetryAfter = tc.obs.Reason, tc.obs.RetryAfter
			}
			if got := decide(&p, &in); got != want {
				t.Errorf("decide() =\n  %+v\nwant\n  %+v", got, want)
			}
		})
	}
}
