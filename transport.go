package heed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/heedhttp/heed/breaker"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

// Defaults of a [Transport] whose fields are zero.
const (
	DefaultConcurrency = 8
	DefaultMaxRetries  = 4
	DefaultMaxWait     = 60 * time.Second
	DefaultBackoffBase = 2 * time.Second
	DefaultBackoffMax  = 30 * time.Second
	DefaultClockSkew   = 200 * time.Millisecond
)

const (
	// minThrottleWait is the least a 429 makes a scope wait, whatever its
	// Retry-After says: zero or missing is not "retry now".
	minThrottleWait = time.Second
	// maxBlock bounds any block, however far in the future a server's reset
	// or Retry-After lies.
	maxBlock = 24 * time.Hour
	// retryJitter is the most random delay added to a server's wait.
	retryJitter = 500 * time.Millisecond
	// drainLimit is how much of a discarded response body is read so that
	// its connection can be reused.
	drainLimit = 64 << 10
	// reserveHorizon is how far ahead a request may book its pacing turn.
	reserveHorizon = time.Second
	// peekLimit is how much of a throttled response's body is read for
	// limits that providers put there (Discord's retry_after, GitHub's
	// secondary-limit message).
	peekLimit = 16 << 10
)

// Transport is an [http.RoundTripper] that keeps the requests it sends
// inside the server's rate limits, and recovers correctly when they are not.
//
// For each request it waits out any block on the request's scopes (global,
// tenant, endpoint and, for writes, the resource), holds one of the
// tenant's concurrency slots, paces the endpoint to its steady-state rate,
// and spaces writes to one resource. From each response it learns quota
// pacing and blocks; a 429 (or a 503 with a wait) blocks only the scope the
// server names, for at least Retry-After, and the request is retried when
// it is safe to repeat and the wait is within MaxWait.
//
// The zero Transport is ready to use: it sends through
// [http.DefaultTransport] and keeps its state in a private [MemoryStore].
// Share a Store between Transports, or use package redisstore, so that
// several Transports, processes or machines behave as one client.
//
// Responses from the server, 429 included, are returned with a nil error;
// use [CheckResponse] to turn a rate-limited response into an error. A
// request that heed refuses to send returns a [*LimitedError] and no
// response. A Transport is safe for concurrent use; its fields must not be
// changed once it is in use.
type Transport struct {
	// Base sends the requests. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Store holds the state shared by every caller. Nil means a private
	// MemoryStore.
	Store store.Store
	// Profile classifies requests for one provider. Nil means the generic
	// profile (see [Profile]).
	Profile *profile.Profile

	// Concurrency caps the requests in flight per tenant. Zero means
	// DefaultConcurrency; negative means no cap.
	Concurrency int
	// MaxRetries caps the retries of one request. Zero means
	// DefaultMaxRetries; negative means no retries.
	MaxRetries int
	// MaxWait is the longest heed waits before one send. A server asking
	// for longer gets its response returned at once; a block or pacing wait
	// longer than this fails with a LimitedError. Zero means DefaultMaxWait.
	MaxWait time.Duration
	// BackoffBase and BackoffMax shape the exponential backoff with full
	// jitter used when the server gives no wait, and as the growing floor of
	// repeated 429s. Zero means DefaultBackoffBase and DefaultBackoffMax.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// ClockSkew is added to waits the server states as absolute times
	// (HTTP dates, reset instants), since its clock and ours differ. Zero
	// means DefaultClockSkew; negative means none.
	ClockSkew time.Duration

	// RetryNonIdempotent retries POST and PATCH requests too. By default
	// only GET, HEAD, OPTIONS, PUT, DELETE and requests carrying an
	// Idempotency-Key header are retried.
	RetryNonIdempotent bool
	// FailFast makes a request that meets a blocked scope fail at once
	// with a LimitedError instead of waiting. [WithFailFast] sets it for
	// one request.
	FailFast bool

	// Target is the share of a server's advertised steady-state rate that
	// heed paces to, in (0, 1]. Zero means DefaultTarget.
	Target float64
	// Reserve is the share of each scope's burst kept for interactive
	// requests, which background requests (see [WithPriority]) may not use.
	// Zero means DefaultReserve; negative means none.
	Reserve float64

	// Breaker, when set, puts a circuit breaker per tenant in front of
	// Base: transport errors and 5xx responses (not 429s, nor 503s with a
	// wait) count as failures, and while a tenant's breaker is open its
	// requests fail at once with a *breaker.OpenError. Nil means no
	// breaker. Breakers live in this Transport, not in the Store.
	Breaker *breaker.Settings

	// TenantSecret keys the hash that names a tenant by its account (see
	// [WithTenant] and [profile.Profile.Account]), so that account names in
	// a shared store, in logs and in errors cannot be traced back to a
	// credential by whoever can guess it. Every process sharing a Store
	// must use the same secret. Nil means a key built into heed: raw values
	// are still never stored, but a guessed credential can be checked
	// against its name.
	TenantSecret []byte

	// Rand supplies jitter. Nil means the math/rand/v2 global source.
	// A Rand is not safe for concurrent use; the Transport locks it.
	Rand *rand.Rand
	// Logger receives a line for each throttle and retry. Nil means silent.
	Logger *slog.Logger

	// OnWait, OnLimited, OnRetry and OnBlock are called, outside any lock,
	// when a request waits before sending, when a response is a throttle,
	// before a retry, and when a scope is blocked. Nil means no call.
	OnWait    func(WaitEvent)
	OnLimited func(LimitedEvent)
	OnRetry   func(RetryEvent)
	OnBlock   func(BlockEvent)
	// OnBreaker is called when a tenant's open circuit breaker refuses a
	// request. Nil means no call.
	OnBreaker func(BreakerEvent)

	initOnce sync.Once
	mem      *memstore.Store
	learner  learner
	randMu   sync.Mutex

	brMu     sync.Mutex
	breakers map[string]*breaker.Breaker

	relMu    sync.Mutex
	released chan struct{} // closed and replaced at a release that has waiters
	waiters  int           // callers waiting on released
}

// WaitEvent describes a request waiting before it is sent.
type WaitEvent struct {
	Request *http.Request
	Reason  store.WaitReason
	Scope   string
	Wait    time.Duration
}

// LimitedEvent describes a response that is a throttle.
type LimitedEvent struct {
	Request    *http.Request
	StatusCode int
	Reason     string
	Scope      string        // the scope blocked
	RetryAfter time.Duration // the server's wait, if it gave one
	Attempt    int           // 0 for the first send
}

// RetryEvent describes a retry about to be made after Delay.
type RetryEvent struct {
	Request    *http.Request
	Attempt    int // the attempt about to be made, 1 for the first retry
	StatusCode int
	Delay      time.Duration
}

// BreakerEvent describes a request refused by its tenant's open circuit
// breaker.
type BreakerEvent struct {
	Request    *http.Request
	Tenant     string
	RetryAfter time.Duration
}

// BlockEvent describes a scope being blocked.
type BlockEvent struct {
	Scope  string
	For    time.Duration
	Reason string // the server's reason, or "quota exhausted"
}

func (t *Transport) init() {
	t.initOnce.Do(func() {
		if t.Store == nil {
			t.mem = memstore.New()
		}
		t.released = make(chan struct{})
	})
}

func (t *Transport) store() store.Store {
	if t.Store != nil {
		return t.Store
	}
	return t.mem
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (t *Transport) maxWait() time.Duration { return orDefault(t.MaxWait, DefaultMaxWait) }

func (t *Transport) skew() time.Duration {
	if t.ClockSkew < 0 {
		return 0
	}
	return orDefault(t.ClockSkew, DefaultClockSkew)
}

// float64n returns a random float64 in [0, 1).
func (t *Transport) float64n() float64 {
	if t.Rand == nil {
		return rand.Float64()
	}
	t.randMu.Lock()
	defer t.randMu.Unlock()
	return t.Rand.Float64()
}

func (t *Transport) jitter(upTo time.Duration) time.Duration {
	return time.Duration(t.float64n() * float64(upTo))
}

// backoff is exponential backoff with full jitter: a random delay up to
// min(BackoffMax, BackoffBase * 2^attempt).
func (t *Transport) backoff(attempt int) time.Duration {
	base := orDefault(t.BackoffBase, DefaultBackoffBase)
	ceil := orDefault(t.BackoffMax, DefaultBackoffMax)
	if attempt < 30 {
		if c := base << attempt; c > 0 && c < ceil {
			ceil = c
		}
	}
	return t.jitter(ceil)
}

// RoundTrip implements [http.RoundTripper].
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	ctx := req.Context()
	r := t.classify(req)
	defer func() {
		*r = request{} // drop the references it holds before recycling it
		requests.Put(r)
	}()
	sent := false // once the body went to Base, Base closes it
	for attempt := 0; ; attempt++ {
		lease, err := t.admit(ctx, req, r)
		if err != nil {
			if !sent {
				closeBody(req)
			}
			return nil, err
		}
		out := req
		if attempt > 0 {
			out = req.Clone(ctx)
			if req.Body != nil && req.Body != http.NoBody {
				if out.Body, err = req.GetBody(); err != nil {
					t.release(r, lease)
					return nil, fmt.Errorf("%w: GetBody: %w", ErrNotRewindable, err)
				}
			}
		}
		var done func(failed bool, at time.Time)
		if br := t.breakerFor(r.tenant); br != nil {
			if done, err = br.Allow(time.Now()); err != nil {
				t.release(r, lease)
				if t.OnBreaker != nil {
					ev := BreakerEvent{Request: req, Tenant: r.tenant}
					if oe := (*breaker.OpenError)(nil); errors.As(err, &oe) {
						ev.RetryAfter = oe.RetryAfter
					}
					t.OnBreaker(ev)
				}
				if !sent {
					closeBody(req)
				}
				if out != req {
					closeBody(out)
				}
				return nil, err
			}
		}
		sent = true
		sentAt := time.Now()
		resp, err := t.base().RoundTrip(out)
		if err != nil {
			t.release(r, lease)
			if done != nil {
				done(true, time.Now())
			}
			return nil, err
		}
		// Learn before releasing: a caller waiting for this request's
		// slot (a write to the same issue, say) must find the block or the
		// exhausted quota this response reports, not slip in before it.
		retry, delay, throttled := t.learn(ctx, req, r, resp, attempt, sentAt)
		t.release(r, lease)
		if done != nil {
			// A 429 (or a 503 with a wait) means the server is healthy and
			// enforcing its limits: only other 5xx count as failures.
			done(resp.StatusCode >= 500 && !throttled, time.Now())
		}
		if !retry {
			return resp, nil
		}
		drain(resp.Body)
		if t.OnRetry != nil {
			t.OnRetry(RetryEvent{Request: req, Attempt: attempt + 1, StatusCode: resp.StatusCode, Delay: delay})
		}
		if t.Logger != nil {
			t.Logger.LogAttrs(ctx, slog.LevelWarn, "heed: retrying", slog.String("endpoint", r.endpoint),
				slog.Int("status", resp.StatusCode), slog.Int("attempt", attempt+1), slog.Duration("delay", delay))
		}
		// Wait out our own delay even if the store lost the block; admit
		// then waits for any longer block another caller recorded.
		if err := t.sleep(ctx, delay, false); err != nil {
			return nil, err
		}
	}
}

// breakerFor returns the tenant's circuit breaker, or nil when the
// Transport has none. The map is bounded: when it is full, closed breakers
// (which hold nothing worth keeping) are dropped, then others until it is
// half full.
func (t *Transport) breakerFor(tenant string) *breaker.Breaker {
	if t.Breaker == nil {
		return nil
	}
	t.brMu.Lock()
	defer t.brMu.Unlock()
	if b := t.breakers[tenant]; b != nil {
		return b
	}
	if t.breakers == nil {
		t.breakers = make(map[string]*breaker.Breaker)
	}
	if len(t.breakers) >= maxLearned {
		now := time.Now()
		for k, b := range t.breakers {
			if b.State(now) == breaker.Closed {
				delete(t.breakers, k)
			}
		}
		for k := range t.breakers { // still full: forget some open ones too
			if len(t.breakers) < maxLearned/2 {
				break
			}
			delete(t.breakers, k)
		}
	}
	b := &breaker.Breaker{Name: tenant, Settings: *t.Breaker}
	t.breakers[tenant] = b
	return b
}

// admit waits until the store admits the request, and returns its lease.
func (t *Transport) admit(ctx context.Context, req *http.Request, r *request) (store.Lease, error) {
	st := t.store()
	failFast := t.FailFast || optionsFrom(ctx).failFast
	paced := false
	for {
		budget := t.maxWait()
		if dl, ok := ctx.Deadline(); ok {
			budget = min(budget, time.Until(dl))
		}
		// Book a turn only within the horizon: turns booked far ahead at
		// a slow rate would hold every caller back after the rate rises.
		r.adm.Paced, r.adm.MaxWait = paced, max(min(budget, reserveHorizon), time.Nanosecond)
		d, err := st.Admit(ctx, &r.adm)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return 0, ctxErr
			}
			return 0, fmt.Errorf("heed: admit: %w", err)
		}
		if d.Reason == store.Admitted {
			return d.Lease, nil
		}
		paced = paced || d.Reserved
		wait := d.Wait
		if d.Reason == store.Blocked {
			if failFast {
				return 0, &LimitedError{Scope: d.Scope, RetryAfter: d.Wait, Reason: "blocked"}
			}
			// A reservation made before the block is forfeit: after it,
			// waiters take new turns in pacing order, with a little jitter,
			// rather than all going at once.
			paced = false
			wait += t.jitter(min(wait/10, 250*time.Millisecond))
		}
		if d.Reason == store.Paced && !d.Reserved && wait > reserveHorizon && wait <= budget {
			// Beyond the horizon: come back when the turn is near, or
			// sooner, to see a rate that has risen meanwhile.
			wait = min(wait-reserveHorizon, reserveHorizon)
			wait += t.jitter(wait / 10)
		} else if d.Reason != store.Busy && wait > budget {
			le := &LimitedError{Scope: d.Scope, RetryAfter: d.Wait, Reason: d.Reason.String()}
			if wait <= t.maxWait() {
				le.Err = context.DeadlineExceeded
			}
			return 0, le
		}
		if t.OnWait != nil {
			t.OnWait(WaitEvent{Request: req, Reason: d.Reason, Scope: d.Scope, Wait: wait})
		}
		if err := t.sleep(ctx, wait, d.Reason == store.Busy); err != nil {
			return 0, err
		}
	}
}

// sleep waits for d, or until ctx ends. With onRelease, it also returns
// early when this Transport releases a lease.
func (t *Transport) sleep(ctx context.Context, d time.Duration, onRelease bool) error {
	if d <= 0 {
		return ctx.Err()
	}
	var rel chan struct{}
	if onRelease {
		t.relMu.Lock()
		rel = t.released
		t.waiters++
		t.relMu.Unlock()
		defer func() {
			t.relMu.Lock()
			t.waiters--
			t.relMu.Unlock()
		}()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-rel:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Transport) release(r *request, lease store.Lease) {
	if lease == 0 {
		return
	}
	// A release must happen even when the request's context has ended.
	if err := t.store().Release(context.WithoutCancel(r.ctx), &r.adm, lease); err != nil && t.Logger != nil {
		t.Logger.Warn("heed: release", slog.Any("err", err))
	}
	t.relMu.Lock()
	if t.waiters > 0 {
		close(t.released)
		t.released = make(chan struct{})
	}
	t.relMu.Unlock()
}

func (t *Transport) maxRetries() int {
	if t.MaxRetries < 0 {
		return 0
	}
	return orDefault(t.MaxRetries, DefaultMaxRetries)
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

// peekBody reads the start of a throttled response's body, where some
// providers put their limits, and leaves resp.Body reading from the start.
func peekBody(resp *http.Response) []byte {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusForbidden:
	default:
		return nil
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	buf := make([]byte, peekLimit)
	n, err := io.ReadFull(resp.Body, buf)
	buf = buf[:n]
	rest := resp.Body
	if err != nil { // the whole body was read
		rest = http.NoBody
	}
	resp.Body = &peekedBody{Reader: io.MultiReader(bytes.NewReader(buf), rest), closer: resp.Body}
	return buf
}

type peekedBody struct {
	io.Reader
	closer io.Closer
}

func (b *peekedBody) Close() error { return b.closer.Close() }

func drain(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	_ = body.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
