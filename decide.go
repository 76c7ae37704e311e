package heed

import (
	"errors"
	"net/http"
	"time"

	"github.com/heedhttp/heed/breaker"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/learn"
	"github.com/heedhttp/heed/store"
)

const (
	// minThrottleWait is the least a 429 makes a scope wait, whatever its
	// Retry-After says: zero or missing is not "retry now".
	minThrottleWait = time.Second
	// retryJitter is the most random delay added to a server's wait, and
	// jitterShare the most as a share of that wait: enough to spread
	// clients that do not share a store, without waiting half as long
	// again as a one-second Retry-After says.
	retryJitter = 500 * time.Millisecond
	jitterShare = 0.1
	// minServerRetry is the least heed waits before retrying a server
	// error, however the backoff's jitter falls.
	minServerRetry = 100 * time.Millisecond
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
	if r.obs.Throttled || resp.StatusCode >= 500 || t.overloads {
		return t.decideResponse(r, resp, attempt)
	}
	return decision{} // inlined, the common case costs no call: nothing to decide
}

// decideResponse is decide for a response that may need a decision.
func (t *Transport) decideResponse(r *request, resp *http.Response, attempt int) decision {
	if !r.obs.Throttled && resp.StatusCode < 500 && !t.Profile.IsOverloaded(resp.StatusCode) {
		return decision{}
	}
	p := t.policy()
	p.skew = t.skewFor(r.req.URL.Host)
	in := t.decideInput(r, resp, attempt)
	return decide(&p, &in)
}

func (t *Transport) policy() retryPolicy {
	return retryPolicy{
		maxRetries:  t.maxRetries(),
		maxWait:     t.maxWait(),
		skew:        t.skew(),
		backoffBase: orDefault(t.BackoffBase, DefaultBackoffBase),
		backoffMax:  orDefault(t.BackoffMax, DefaultBackoffMax),
		rand:        t.rnd,
	}
}

// decideInput is one response, as decide sees it.
type decideInput struct {
	status int
	obs    *header.Observation
	keys   *learn.Request
	// widened is the scope learning takes a bare 429 to be a limit of, when
	// it spans the endpoints that draw them; "" for the endpoint's own.
	widened string
	// bareBlock is, for a bare 429, how long learning says it blocks its
	// scope when that is less than the retry's wait (learn.Plan.BareBlock).
	bareBlock time.Duration
	// bareRetry makes bareBlock the refused request's own wait before a
	// retry (learn.Plan.BareRetry).
	bareRetry bool
	// canRetry reports a request safe to repeat; rewindable, one whose body
	// can be sent again (a throttled request the provider did not process
	// may then be retried, whatever its method).
	canRetry, rewindable bool
	// The profile's: a throttled request is not processed; server errors
	// are retried; this status means overloaded.
	notProcessed, serverRetry, overloaded bool
	// shouldRetry is the server's own word (X-Should-Retry,
	// Stripe-Should-Retry): 1 for true, -1 for false, 0 for none.
	shouldRetry int8
	attempt     int
	now         time.Time
	deadline    time.Time // the context's, or zero
}

// decision is what heed does with one response.
type decision struct {
	// Throttled reports a throttle: a 429, a 503 with a wait, or a
	// provider's own (GitHub's 403 with nothing remaining, say).
	Throttled bool
	// Retry reports that the request is to be sent again after Delay.
	Retry bool
	// Delay is the wait before a retry, and how long a throttle blocks
	// Block's scope, but for a bare 429 on a scope AIMD paces (Block.For).
	Delay time.Duration
	// Block is the block a throttle sets; its Key is "" for none.
	Block store.Block
	// Own is, when Block is on a widened scope and the server mandated
	// the wait, the same block on the refused request's own scope:
	// requests of that endpoint admitted before the hypothesis was
	// adopted do not check the widened scope. Its Key is "" for none.
	Own store.Block
	// Event is the throttle to report, when Throttled.
	Event LimitedEvent
	// Budgeted reports a retry of a server error, which takes one token of
	// the Transport's retry budget or is not made.
	Budgeted bool
}

func (t *Transport) decideInput(r *request, resp *http.Response, attempt int) decideInput {
	p := t.Profile
	return decideInput{
		status:       resp.StatusCode,
		obs:          &r.obs,
		keys:         &r.keys,
		widened:      r.plan.Widened,
		bareBlock:    r.plan.BareBlock,
		bareRetry:    r.plan.BareRetry,
		canRetry:     r.canRetry,
		rewindable:   r.rewindable,
		notProcessed: p != nil && p.ThrottledNotProcessed,
		serverRetry:  p != nil && p.RetryServerErrors,
		overloaded:   p.IsOverloaded(resp.StatusCode),
		shouldRetry:  shouldRetry(resp.Header),
		attempt:      attempt,
		now:          r.respAt,
		deadline:     r.deadline,
	}
}

// shouldRetry reads a server's own word on retrying: OpenAI's and
// Anthropic's X-Should-Retry, Stripe's Stripe-Should-Retry.
func shouldRetry(h http.Header) int8 {
	v := first(h["X-Should-Retry"])
	if v == "" {
		v = first(h["Stripe-Should-Retry"])
	}
	switch v {
	case "true":
		return 1
	case "false":
		return -1
	}
	return 0
}

// decide chooses what to do with a response. Anything but a throttle is
// returned to the caller. A throttle blocks the scope the server named
// (the profile's choice when it named none; the scope the endpoints that
// draw bare 429s share, when learning takes a bare 429 for their limit) for at least the server's wait
// plus jitter, growing exponentially on further attempts; a 429 with no
// wait or a zero one waits at least minThrottleWait. The block holds even
// when the request is not retried. It is retried when it is safe to
// repeat, has retries left, the server's wait is within MaxWait, and the
// delay ends before the context's deadline.
func decide(p *retryPolicy, in *decideInput) decision {
	obs := in.obs
	if !obs.Throttled {
		return decideServerError(p, in)
	}
	serverWait, hasWait := obs.RetryAfter, obs.HasRetryAfter
	if hasWait && obs.RetryAfterInstant {
		serverWait = max(serverWait+p.skew, 0) // an instant on the server's clock
	}
	if in.status == http.StatusTooManyRequests && serverWait < minThrottleWait {
		serverWait, hasWait = minThrottleWait, true
	}
	// Retry-After is the least we wait, never the whole answer: burst
	// limits always say 1, so the backoff floor grows with each attempt.
	// On the first throttle the server's own wait is the answer; on each
	// further one the backoff's floor grows, since burst limits always say
	// 1 (a missing wait gets the backoff from the first).
	delay := p.backoff(in.attempt)
	if hasWait {
		w := serverWait + time.Duration(p.rand()*float64(min(retryJitter, time.Duration(jitterShare*float64(serverWait)))))
		if obs.HasRetryAfter && in.attempt == 0 {
			delay = w
		} else {
			delay = max(w, delay)
		}
	}
	if !obs.HasRetryAfter && in.bareRetry && in.bareBlock > 0 {
		// A limiter with no burst refused the request for coming early:
		// it is taken one interval on, as the others are.
		delay = in.bareBlock
	}
	delay = min(delay, learn.MaxBlock)

	kind := obs.ReasonScope
	if kind == "" {
		kind = in.keys.UnknownScope
	}
	key := in.keys.ScopeKey(kind)
	own := ""
	if in.widened != "" {
		key = in.widened
		if obs.HasRetryAfter {
			// A wait the server mandates holds for the endpoint it
			// refused, whose requests admitted before the hypothesis
			// do not check the widened scope.
			own = in.keys.ScopeKey(kind)
		}
	}

	block := delay
	if !obs.HasRetryAfter && in.bareBlock > 0 {
		// A bare 429 on a scope AIMD paces: the request waits its second
		// before a retry, but the others wait only what the pace needs;
		// in a long run of 429s (a window not yet turned), as long as
		// the run has lasted, up to the backoff's cap (BackoffMax).
		block = min(in.bareBlock, max(p.backoffMax, time.Second), learn.MaxBlock)
	}

	repeatable := in.canRetry || in.notProcessed && in.rewindable
	retry := repeatable && in.attempt < p.maxRetries && serverWait <= p.maxWait && in.shouldRetry >= 0
	if !in.deadline.IsZero() && in.now.Add(delay).After(in.deadline) {
		retry = false
	}
	return decision{
		Throttled: true,
		Retry:     retry,
		Delay:     delay,
		Block:     store.Block{Key: key, For: block},
		Own:       ownBlock(own, block),
		Event: LimitedEvent{StatusCode: in.status, Reason: obs.Reason, Scope: key,
			RetryAfter: obs.RetryAfter, Attempt: in.attempt},
	}
}

// ownBlock is the block of a refused request's own scope, key, beside a
// widened one: none when key is "".
func ownBlock(key string, d time.Duration) store.Block {
	if key == "" {
		return store.Block{}
	}
	return store.Block{Key: key, For: d}
}

// decideServerError decides on a response that is no throttle: a server
// error (5xx) or an overloaded status is retried, with exponential backoff
// and full jitter, when the profile retries server errors (or the server
// says to), the request is safe to repeat, it has retries left, and the
// delay ends before the deadline; the retry takes a token of the retry
// budget. Anything else is returned.
func decideServerError(p *retryPolicy, in *decideInput) decision {
	if in.status < 500 && !in.overloaded || in.shouldRetry < 0 {
		return decision{}
	}
	// An overloaded answer from a provider that processes nothing it
	// refuses (Anthropic's 529) is as safe to repeat as its throttles.
	repeatable := in.canRetry || in.overloaded && in.notProcessed && in.rewindable
	if !(in.serverRetry || in.overloaded || in.shouldRetry > 0) || !repeatable || in.attempt >= p.maxRetries {
		return decision{}
	}
	delay := max(p.backoff(in.attempt), minServerRetry)
	if !in.deadline.IsZero() && in.now.Add(delay).After(in.deadline) {
		return decision{}
	}
	return decision{Retry: true, Delay: delay, Budgeted: true}
}

// decideError decides on a transport error (no response): retried like a
// server error, for requests safe to repeat, when the profile retries
// server errors.
func (t *Transport) decideError(r *request, err error, attempt int) decision {
	if r.ctx.Err() != nil || errors.Is(err, ErrNotRewindable) || errors.Is(err, breaker.ErrOpen) {
		return decision{}
	}
	p := t.policy()
	in := decideInput{status: 599, serverRetry: t.Profile != nil && t.Profile.RetryServerErrors,
		canRetry: r.canRetry, attempt: attempt, now: time.Now(), deadline: r.deadline}
	return decideServerError(&p, &in)
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

// first returns a header field's first value, or "": for canonical names,
// it spares Header.Get's canonicalisation.
func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}
