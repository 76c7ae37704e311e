package heed

import (
	"net/http"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/learn"
	"github.com/heedhttp/heed/store"
)

const (
	// minThrottleWait is the least a 429 makes a scope wait, whatever its
	// Retry-After says: zero or missing is not "retry now".
	minThrottleWait = time.Second
	// retryJitter is the most random delay added to a server's wait.
	retryJitter = 500 * time.Millisecond
)

// retryPolicy is what decide needs of the Transport's settings.
type retryPolicy struct {
	maxRetries              int
	maxWait                 time.Duration
	skew                    time.Duration
	backoffBase, backoffMax time.Duration
	// rand returns a random float64 in [0, 1), for jitter.
	rand func() float64
}

// decide decides what to do with the response to attempt of r.
func (t *Transport) decide(r *request, resp *http.Response, attempt int) decision {
	p := t.policy()
	in := r.decideInput(resp, attempt)
	return decide(&p, &in)
}

func (t *Transport) policy() retryPolicy {
	return retryPolicy{
		maxRetries:  t.maxRetries(),
		maxWait:     t.maxWait(),
		skew:        t.skew(),
		backoffBase: orDefault(t.BackoffBase, DefaultBackoffBase),
		backoffMax:  orDefault(t.BackoffMax, DefaultBackoffMax),
		rand:        t.float64n,
	}
}

// decideInput is one response, as decide sees it.
type decideInput struct {
	status int
	obs    *header.Observation
	// retryAfter is the response's Retry-After field, which tells a delay
	// in seconds (needing no clock-skew allowance) from a date.
	retryAfter string
	keys       *learn.Request
	// widen reports that learning takes a bare 429 for a limit of the
	// whole tenant.
	widen    bool
	canRetry bool
	attempt  int
	now      time.Time
	deadline time.Time // the context's, or zero
}

// decision is what heed does with one response.
type decision struct {
	// Throttled reports a throttle: a 429, a 503 with a wait, or a
	// provider's own (GitHub's 403 with nothing remaining, say).
	Throttled bool
	// Retry reports that the request is to be sent again after Delay.
	Retry bool
	// Delay is how long a throttle blocks Block's scope, and the wait
	// before a retry.
	Delay time.Duration
	// Block is the block a throttle sets; its Key is "" for none.
	Block store.Block
	// Event is the throttle to report, when Throttled.
	Event LimitedEvent
}

func (r *request) decideInput(resp *http.Response, attempt int) decideInput {
	return decideInput{
		status:     resp.StatusCode,
		obs:        &r.obs,
		retryAfter: resp.Header.Get("Retry-After"),
		keys:       &r.keys,
		widen:      r.plan.Widen,
		canRetry:   r.canRetry,
		attempt:    attempt,
		now:        time.Now(),
		deadline:   r.deadline,
	}
}

// decide chooses what to do with a response. Anything but a throttle is
// returned to the caller. A throttle blocks the scope the server named
// (the profile's choice when it named none, the tenant when learning
// takes a bare 429 for a tenant-wide limit) for at least the server's wait
// plus jitter, growing exponentially on further attempts; a 429 with no
// wait or a zero one waits at least minThrottleWait. The block holds even
// when the request is not retried. It is retried when it is safe to
// repeat, has retries left, the server's wait is within MaxWait, and the
// delay ends before the context's deadline.
func decide(p *retryPolicy, in *decideInput) decision {
	obs := in.obs
	if !obs.Throttled {
		return decision{}
	}
	serverWait, hasWait := obs.RetryAfter, obs.HasRetryAfter
	if hasWait && !isDeltaSeconds(in.retryAfter) {
		serverWait += p.skew // an instant on the server's clock
	}
	if in.status == http.StatusTooManyRequests && serverWait < minThrottleWait {
		serverWait, hasWait = minThrottleWait, true
	}
	// Retry-After is the least we wait, never the whole answer: burst
	// limits always say 1, so the backoff floor grows with each attempt.
	delay := p.backoff(in.attempt)
	if hasWait {
		delay = max(serverWait+time.Duration(p.rand()*float64(retryJitter)), delay)
	}
	delay = min(delay, learn.MaxBlock)

	kind := obs.ReasonScope
	if kind == "" {
		kind = in.keys.UnknownScope
	}
	if in.widen {
		kind = header.ScopeTenant
	}
	key := in.keys.ScopeKey(kind)

	retry := in.canRetry && in.attempt < p.maxRetries && serverWait <= p.maxWait
	if !in.deadline.IsZero() && in.now.Add(delay).After(in.deadline) {
		retry = false
	}
	return decision{
		Throttled: true,
		Retry:     retry,
		Delay:     delay,
		Block:     store.Block{Key: key, For: delay},
		Event: LimitedEvent{StatusCode: in.status, Reason: obs.Reason, Scope: key,
			RetryAfter: obs.RetryAfter, Attempt: in.attempt},
	}
}

// backoff is exponential backoff with full jitter: a random delay up to
// min(backoffMax, backoffBase * 2^attempt).
func (p *retryPolicy) backoff(attempt int) time.Duration {
	ceil := p.backoffMax
	if attempt < 30 {
		if c := p.backoffBase << attempt; c > 0 && c < ceil {
			ceil = c
		}
	}
	return time.Duration(p.rand() * float64(ceil))
}

// isDeltaSeconds reports whether a Retry-After value is a number of
// seconds, which needs no clock-skew allowance, rather than a date.
func isDeltaSeconds(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < '0' || c > '9') && c != '.' && c != ' ' {
			return false
		}
	}
	return true
}
