package proxy

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/scope"
)

// Bounds of what the status page keeps, whatever the traffic.
const (
	maxTrackedScopes = 256
	maxTrackedLimits = 8
	maxThrottles     = 32
)

// Status is what the proxy knows, as /_heed/status.json serves it. Scope
// keys name tenants by a keyed hash of their account, never a credential.
type Status struct {
	Now       time.Time      `json:"now"`
	Upstream  string         `json:"upstream"`
	Store     string         `json:"store"`
	Ready     bool           `json:"ready"`
	ReadyErr  string         `json:"ready_error,omitempty"`
	InFlight  int64          `json:"in_flight"`
	Waiting   int64          `json:"waiting"`
	Requests  uint64         `json:"requests"`
	Answers   map[string]int `json:"answers"` // the proxy's own answers, by kind
	Cache     *CacheStats    `json:"cache,omitempty"`
	HitRate   float64        `json:"cache_hit_rate"`
	Buffered  int64          `json:"buffered_bytes"`
	Scopes    []ScopeStatus  `json:"scopes"`
	Throttles []Throttle     `json:"throttles"`
}

// ScopeStatus is what heed has learned about one scope.
type ScopeStatus struct {
	Key          string        `json:"key"`
	Tenant       string        `json:"tenant"`
	Limits       []LimitStatus `json:"limits,omitempty"`
	BlockedUntil time.Time     `json:"blocked_until,omitzero"`
	BlockedFor   float64       `json:"blocked_for_seconds,omitempty"` // left, at Now
	BlockReason  string        `json:"block_reason,omitempty"`
	BlockStatus  int           `json:"block_status,omitempty"`
	Throttles    int           `json:"throttles"`
	Waits        int           `json:"waits"`
	Seen         time.Time     `json:"seen"`
}

// LimitStatus is one limit an upstream response advertised.
type LimitStatus struct {
	Name      string    `json:"name,omitempty"`
	Quota     float64   `json:"quota,omitempty"`
	Remaining *float64  `json:"remaining,omitempty"`
	Window    float64   `json:"window_seconds,omitempty"`
	Reset     time.Time `json:"reset,omitzero"`
	Dialect   string    `json:"dialect"`
}

// Throttle is one rate-limit rejection from the upstream.
type Throttle struct {
	At         time.Time `json:"at"`
	Status     int       `json:"status"`
	Reason     string    `json:"reason,omitempty"`
	Scope      string    `json:"scope"`
	RetryAfter float64   `json:"retry_after_seconds"`
}

// tracker collects, from the Transport's hooks and the upstream's
// responses, what the status page shows. It is bounded: at most
// maxTrackedScopes scopes, the least recently seen unblocked one evicted
// first.
type tracker struct {
	waiting  atomic.Int64
	inFlight atomic.Int64
	requests atomic.Uint64

	mu        sync.Mutex
	scopes    map[string]*ScopeStatus
	throttles []Throttle // a ring of maxThrottles
	next      int
	answers   map[string]int
}

func (t *tracker) scopeLocked(key string, now time.Time) *ScopeStatus {
	if s, ok := t.scopes[key]; ok {
		s.Seen = now
		return s
	}
	if t.scopes == nil {
		t.scopes = make(map[string]*ScopeStatus)
	}
	if len(t.scopes) >= maxTrackedScopes {
		var victim *ScopeStatus
		for _, s := range t.scopes {
			if victim == nil || (s.BlockedUntil.Before(now) && (victim.BlockedUntil.After(now) || s.Seen.Before(victim.Seen))) {
				victim = s
			}
		}
		delete(t.scopes, victim.Key)
	}
	s := &ScopeStatus{Key: key, Tenant: scope.TenantOf(key), Seen: now}
	t.scopes[key] = s
	return s
}

func (t *tracker) block(e heed.BlockEvent) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.scopeLocked(e.Scope, now)
	if until := now.Add(e.For); until.After(s.BlockedUntil) {
		s.BlockedUntil = until
		s.BlockReason = e.Reason
	}
}

func (t *tracker) limited(e heed.LimitedEvent) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.scopeLocked(e.Scope, now)
	s.Throttles++
	s.BlockStatus = e.StatusCode
	th := Throttle{At: now, Status: e.StatusCode, Reason: e.Reason, Scope: e.Scope, RetryAfter: e.RetryAfter.Seconds()}
	if len(t.throttles) < maxThrottles {
		t.throttles = append(t.throttles, th)
	} else {
		t.throttles[t.next] = th
	}
	t.next = (t.next + 1) % maxThrottles
}

func (t *tracker) waited(e heed.WaitEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scopeLocked(e.Scope, time.Now()).Waits++
}

func (t *tracker) answered(kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.answers == nil {
		t.answers = make(map[string]int)
	}
	t.answers[kind]++
}

// blockStatus returns the status of the upstream answer that blocked key
// (429 or 503), or 429 when the block was learned otherwise (an exhausted
// quota, another proxy sharing the store).
func (t *tracker) blockStatus(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.scopes[key]; ok && s.BlockStatus == http.StatusServiceUnavailable {
		return http.StatusServiceUnavailable
	}
	return http.StatusTooManyRequests
}

// observe records the limits an upstream response advertises for the
// endpoint scope key.
func (t *tracker) observe(key string, status int, h http.Header, now time.Time) {
	if !hasRateLimitHeader(h) {
		return
	}
	obs := header.Parse(status, h, nil, now)
	if len(obs.Limits) == 0 {
		return
	}
	limits := make([]LimitStatus, 0, min(len(obs.Limits), maxTrackedLimits))
	for _, l := range obs.Limits[:min(len(obs.Limits), maxTrackedLimits)] {
		ls := LimitStatus{Name: l.Name, Dialect: string(l.Dialect)}
		if l.Has(header.HasQuota) {
			ls.Quota = l.Quota
		}
		if l.Has(header.HasRemaining) {
			r := l.Remaining
			ls.Remaining = &r
		}
		if l.Has(header.HasWindow) {
			ls.Window = l.Window.Seconds()
		}
		if l.Has(header.HasReset) {
			ls.Reset = l.Reset
		}
		limits = append(limits, ls)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scopeLocked(key, now).Limits = limits
}

func hasRateLimitHeader(h http.Header) bool {
	for name := range h {
		if isRateLimitHeader(name) || strings.Contains(strings.ToLower(name), "ratelimit") {
			return true
		}
	}
	return false
}

// snapshot fills st with what the tracker holds at now: scopes blocked
// first, then by most recently seen; throttles newest first.
func (t *tracker) snapshot(st *Status, now time.Time) {
	st.Waiting, st.InFlight, st.Requests = t.waiting.Load(), t.inFlight.Load(), t.requests.Load()
	t.mu.Lock()
	st.Scopes = make([]ScopeStatus, 0, len(t.scopes))
	for _, s := range t.scopes {
		c := *s
		c.Limits = slices.Clone(s.Limits)
		if c.BlockedUntil.After(now) {
			c.BlockedFor = c.BlockedUntil.Sub(now).Seconds()
		}
		st.Scopes = append(st.Scopes, c)
	}
	st.Throttles = make([]Throttle, 0, len(t.throttles))
	n := len(t.throttles)
	for i := range n {
		st.Throttles = append(st.Throttles, t.throttles[((t.next-1-i)%n+n)%n])
	}
	st.Answers = make(map[string]int, len(t.answers))
	for k, v := range t.answers {
		st.Answers[k] = v
	}
	t.mu.Unlock()
	slices.SortFunc(st.Scopes, func(a, b ScopeStatus) int {
		if ab, bb := a.BlockedFor > 0, b.BlockedFor > 0; ab != bb {
			if ab {
				return -1
			}
			return 1
		}
		return b.Seen.Compare(a.Seen)
	})
}
