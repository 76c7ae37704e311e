package heed

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heedhttp/heed/breaker"
	"github.com/heedhttp/heed/internal/learn"
)

// send sends one attempt of a request: the caller's request itself the
// first time, a clone with its body rewound for a retry, through the
// tenant's circuit breaker when there is one, to Base.
func (t *Transport) send(req *http.Request, r *request, attempt int) (*http.Response, error) {
	out := req
	if attempt > 0 || r.idemKey != "" {
		out = req.Clone(r.ctx)
		if attempt > 0 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("%w: GetBody: %w", ErrNotRewindable, err)
			}
			out.Body = body
		}
		if r.idemKey != "" {
			out.Header.Set("Idempotency-Key", r.idemKey)
		}
	}
	r.sentAt = r.start
	if r.waited || attempt > 0 {
		r.sentAt = time.Now()
	}
	if br := t.breakerFor(r.tenant()); br != nil {
		done, err := br.Allow(r.sentAt)
		if err != nil {
			if t.OnBreaker != nil {
				ev := BreakerEvent{Request: req, Tenant: r.tenant()}
				if oe := (*breaker.OpenError)(nil); errors.As(err, &oe) {
					ev.RetryAfter = oe.RetryAfter
				}
				t.OnBreaker(ev)
			}
			if out != req {
				closeBody(out)
			}
			return nil, err
		}
		r.done = done
	}
	r.sent = true
	t.countInFlight(r)
	resp, err := t.base().RoundTrip(out)
	if err != nil {
		t.dropInFlight(r)
		if r.done != nil {
			r.done(true, time.Now())
			r.done = nil
		}
		return nil, err
	}
	return resp, nil
}

// breakerFor returns the tenant's circuit breaker, or nil when the
// Transport has none. The map is bounded: when it is full, closed breakers
// (which hold nothing worth keeping) are dropped, then others until it is
// half full.
func (t *Transport) breakerFor(tenant string) *breaker.Breaker {
	if t.Breaker == nil {
		return nil // inlined: a Transport with no breaker makes no call
	}
	return t.breakerOf(tenant)
}

// breakerOf is breakerFor for a Transport with breakers.
func (t *Transport) breakerOf(tenant string) *breaker.Breaker {
	t.brMu.Lock()
	defer t.brMu.Unlock()
	if b := t.breakers[tenant]; b != nil {
		return b
	}
	if t.breakers == nil {
		t.breakers = make(map[string]*breaker.Breaker)
	}
	if len(t.breakers) >= learn.MaxEntries {
		now := time.Now()
		for k, b := range t.breakers {
			if b.State(now) == breaker.Closed {
				delete(t.breakers, k)
			}
		}
		for k := range t.breakers { // still full: forget some open ones too
			if len(t.breakers) < learn.MaxEntries/2 {
				break
			}
			delete(t.breakers, k)
		}
	}
	b := &breaker.Breaker{Name: tenant, Settings: *t.Breaker}
	t.breakers[tenant] = b
	return b
}
