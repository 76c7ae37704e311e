package workload

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heedhttp/heed/profile"
)

// SeedTransport is the JiraClient of Jira's rate-limiting guide in Go, kept as close to the
// guide's TypeScript as a RoundTripper allows, as the baseline heed
// improves on: a token bucket per endpoint at half of Jira's default rates
// (GET and POST 50/s, PUT and DELETE 25/s), writes to one issue one at a
// time 350ms apart, a shared gate that blocks the scope a 429's
// RateLimit-Reason names for at least Retry-After (or X-RateLimit-Reset,
// else exponential backoff with full jitter, and never less than that
// backoff), quota pacing from r and t, and retries of idempotent methods
// only, at most 4, never when the server asks for more than 60s.
//
// Its rates are fixed: it never learns the server's. It does not cap
// concurrency; the caller's workers do.
type SeedTransport struct {
	base http.RoundTripper

	mu      sync.Mutex
	buckets map[string]*bucket
	blocked map[string]time.Time
	tails   map[string]chan struct{} // issue -> closed when the next write may go
	rng     *rand.Rand
}

// NewSeedTransport returns a SeedTransport sending through base.
func NewSeedTransport(base http.RoundTripper) *SeedTransport {
	return &SeedTransport{base: base, buckets: map[string]*bucket{}, blocked: map[string]time.Time{}, tails: map[string]chan struct{}{},
		rng: rand.New(rand.NewPCG(1, 2))}
}

const (
	seedMaxRetries = 4
	seedMaxDelay   = 60 * time.Second
	seedIssueGap   = 350 * time.Millisecond
)

// RoundTrip implements [http.RoundTripper].
func (s *SeedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	tenant := "tenant:" + req.URL.Scheme + "://" + req.URL.Host
	endpoint := req.URL.Host + " " + profile.EndpointKey(req.Method, req.URL.Path)
	issue := ""
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		if k := profile.JiraIssueKey(req.URL.Path); k != "" {
			issue = req.URL.Host + " issue:" + k
		}
	}
	if issue == "" {
		return s.send(ctx, req, tenant, endpoint, "")
	}
	// PerKeySpacer: writes to one issue one at a time, with a gap after each.
	s.mu.Lock()
	prev, mine := s.tails[issue], make(chan struct{})
	s.tails[issue] = mine
	s.mu.Unlock()
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			go func() { <-prev; close(mine) }() // keep the chain
			return nil, ctx.Err()
		}
	}
	resp, err := s.send(ctx, req, tenant, endpoint, issue)
	time.AfterFunc(seedIssueGap, func() {
		close(mine)
		s.mu.Lock()
		if s.tails[issue] == mine {
			delete(s.tails, issue)
		}
		s.mu.Unlock()
	})
	return resp, err
}

func (s *SeedTransport) send(ctx context.Context, req *http.Request, tenant, endpoint, issue string) (*http.Response, error) {
	canRetry := req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodPut || req.Method == http.MethodDelete
	for attempt := 0; ; attempt++ {
		// 1. Wait out any block on the global quota, tenant, endpoint, issue.
		if err := s.wait(ctx, "global", tenant, endpoint, issue); err != nil {
			return nil, err
		}
		// 2. Pace to the steady-state rate.
		if err := s.take(ctx, endpoint, req.Method); err != nil {
			return nil, err
		}
		out := req
		if attempt > 0 {
			out = req.Clone(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				out.Body = body
			}
		}
		resp, err := s.base.RoundTrip(out)
		if err != nil {
			return nil, err
		}
		// 3. Quota running low: slow everything down a little.
		if scope, d, ok := seedQuotaPacing(resp.Header); ok {
			if scope != "global" {
				scope = tenant
			}
			s.block(scope, d)
		}
		serverDelay, hasDelay := seedRetryDelay(resp.Header, time.Now())
		limited := resp.StatusCode == http.StatusTooManyRequests || (resp.StatusCode == http.StatusServiceUnavailable && hasDelay)
		if !limited {
			return resp, nil
		}
		// 4. Retry-After is a minimum; the backoff grows with each attempt.
		backoff := min(seedMaxDelay, time.Duration(s.random()*float64(min(30*time.Second, 2*time.Second<<attempt))))
		delay := backoff
		if hasDelay {
			delay = max(serverDelay+time.Duration(s.random()*float64(500*time.Millisecond)), backoff)
		}
		// 5. Block the limited scope, even if this request is not retried.
		scope := endpoint
		switch resp.Header.Get("RateLimit-Reason") {
		case "jira-quota-global-based":
			scope = "global"
		case "jira-quota-tenant-based":
			scope = tenant
		case "jira-per-issue-on-write":
			if issue != "" {
				scope = issue
			}
		}
		s.block(scope, delay)
		// 6. Retry only what is safe, within the retry and wait caps.
		if !canRetry || attempt >= seedMaxRetries || (hasDelay && serverDelay > seedMaxDelay) ||
			(req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
			return resp, nil
		}
		discard(resp)
	}
}

func (s *SeedTransport) random() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64()
}

func (s *SeedTransport) block(scope string, d time.Duration) {
	until := time.Now().Add(d)
	s.mu.Lock()
	if until.After(s.blocked[scope]) {
		s.blocked[scope] = until
	}
	s.mu.Unlock()
}

func (s *SeedTransport) wait(ctx context.Context, scopes ...string) error {
	for {
		s.mu.Lock()
		var until time.Time
		for _, sc := range scopes {
			if t := s.blocked[sc]; t.After(until) {
				until = t
			}
		}
		s.mu.Unlock()
		d := time.Until(until)
		if d <= 0 {
			return nil
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// bucket is the guide's TokenBucket.
type bucket struct {
	tokens, capacity, rate float64
	last                   time.Time
}

func (s *SeedTransport) take(ctx context.Context, endpoint, method string) error {
	for {
		s.mu.Lock()
		b := s.buckets[endpoint]
		now := time.Now()
		if b == nil {
			rps := 50.0 // DEFAULT_RPS[method] ?? 50, times SAFETY_FACTOR 0.5
			switch method {
			case http.MethodGet, http.MethodPost:
				rps = 100
			}
			rps = max(1, rps*0.5)
			b = &bucket{tokens: rps, capacity: rps, rate: rps, last: now}
			s.buckets[endpoint] = b
		}
		b.tokens = min(b.capacity, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
		if b.tokens >= 1 {
			b.tokens--
			s.mu.Unlock()
			return nil
		}
		wait := time.Duration(math.Ceil((1-b.tokens)/b.rate*1000)) * time.Millisecond
		s.mu.Unlock()
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// seedQuotaPacing is the guide's quotaPacing: the pause between requests
// that makes a low global or tenant quota last, or the rest of the window
// when it is exhausted.
func seedQuotaPacing(h http.Header) (scope string, d time.Duration, ok bool) {
	for _, name := range []string{"RateLimit", "Beta-RateLimit"} {
		for entry := range strings.SplitSeq(h.Get(name), ",") {
			policy, attrs, _ := strings.Cut(entry, ";")
			policy = strings.Trim(strings.TrimSpace(policy), `"`)
			if policy != "global-app-quota" && policy != "tenant-app-quota" {
				continue
			}
			r, t := -1.0, -1.0
			for attr := range strings.SplitSeq(attrs, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(attr), "=")
				n, err := strconv.ParseFloat(v, 64)
				switch {
				case err != nil:
				case k == "r":
					r = n
				case k == "t":
					t = n
				}
			}
			if r < 0 || t < 0 {
				continue
			}
			scope = "tenant"
			if policy == "global-app-quota" {
				scope = "global"
			}
			if r < 1 {
				return scope, time.Duration(t * float64(time.Second)), true
			}
			return scope, time.Duration(math.Ceil(t*1000/r)) * time.Millisecond, true
		}
	}
	return "", 0, false
}

// seedRetryDelay is the guide's retryDelayMs.
func seedRetryDelay(h http.Header, now time.Time) (time.Duration, bool) {
	if ra := h.Get("Retry-After"); ra != "" {
		if secs, err := strconv.ParseFloat(ra, 64); err == nil {
			return max(0, time.Duration(secs*float64(time.Second))), true
		}
		if t, err := http.ParseTime(ra); err == nil {
			return max(0, t.Sub(now)), true
		}
	}
	if reset := h.Get("X-RateLimit-Reset"); reset != "" {
		if t, err := time.Parse(time.RFC3339, reset); err == nil {
			return max(0, t.Sub(now)), true
		}
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
