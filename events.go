package heed

import (
	"net/http"
	"time"

	"github.com/heedhttp/heed/store"
)

// WaitEvent describes a request waiting before it is sent, given to
// [Transport.OnWait].
type WaitEvent struct {
	// Request is the caller's request. It must not be changed.
	Request *http.Request
	// Reason says what the request waits for: a block, its pacing turn, a
	// concurrency slot or a write gap.
	Reason store.WaitReason
	// Scope is the key of the scope that imposes the wait (see
	// [LimitedError.Scope] for the format).
	Scope string
	// Wait is how long the request waits now; it may wait again after.
	Wait time.Duration
	// Shadow reports a Transport in shadow mode: the request would have
	// waited Wait, and was sent at once instead.
	Shadow bool
	// Refused reports, in shadow mode, that the Transport would have
	// refused the request with a LimitedError (a fail-fast request meeting
	// a block, or a wait beyond MaxWait).
	Refused bool
}

// LimitedEvent describes a response that is a throttle (a 429, a 503 with a
// wait, or a provider's own throttle), given to [Transport.OnLimited].
type LimitedEvent struct {
	// Request is the caller's request. It must not be changed.
	Request *http.Request
	// StatusCode is the response's status.
	StatusCode int
	// Reason is the server's reason (RateLimit-Reason and the like), or "".
	Reason string
	// Scope is the key of the scope the throttle blocks.
	Scope string
	// RetryAfter is the wait the server gave, or zero when it gave none.
	RetryAfter time.Duration
	// Attempt is 0 for the first send, 1 for the first retry, and so on.
	Attempt int
}

// RetryEvent describes a retry about to be made after Delay, given to
// [Transport.OnRetry].
type RetryEvent struct {
	// Request is the caller's request. It must not be changed.
	Request *http.Request
	// Attempt is the attempt about to be made: 1 for the first retry.
	Attempt int
	// StatusCode is the status of the response that is retried.
	StatusCode int
	// Delay is how long heed waits before the retry (admission may wait
	// longer, for a block another caller recorded).
	Delay time.Duration
	// Throttled reports a retry of a throttle (a 429, a 503 with a wait);
	// false means of a server error, or of a transport error when
	// StatusCode is zero.
	Throttled bool
	// Denied reports a retry of a server error that was not made: the
	// Transport's retry budget was spent.
	Denied bool
	// Shadow reports a Transport in shadow mode: the retry would have been
	// made, and the response was returned instead.
	Shadow bool
}

// LimitsEvent describes the limits one response advertised, given to
// [Transport.OnLimits].
type LimitsEvent struct {
	// Request is the caller's request. It must not be changed.
	Request *http.Request
	// Limits are the response's limits, as heed read them.
	Limits []Limit
}

// Limit is one limit a response advertised.
type Limit struct {
	// Name is the server's name for it, or "" when it gave none.
	Name string
	// Scope is the server's hint of what it applies to: "global",
	// "tenant", "endpoint", "key", "resource:NAME", "bucket:ID", or "".
	Scope string
	// Unit is what it counts: "requests", "tokens", "points" ...
	Unit string
	// Quota is the units allowed per Window, or zero when unknown.
	Quota float64
	// Remaining is the units left, or -1 when unknown.
	Remaining float64
	// Window is the limit's window, or zero when unknown.
	Window time.Duration
	// ResetIn is how long until the window resets, or zero when unknown.
	ResetIn time.Duration
}

// BreakerEvent describes a request refused by its tenant's open circuit
// breaker, given to [Transport.OnBreaker].
type BreakerEvent struct {
	// Request is the caller's request. It must not be changed.
	Request *http.Request
	// Tenant is the key of the tenant whose breaker is open.
	Tenant string
	// RetryAfter is how long until the breaker lets a trial request through.
	RetryAfter time.Duration
}

// BlockEvent describes a scope being blocked, given to [Transport.OnBlock].
type BlockEvent struct {
	// Request is the caller's request whose response set the block. It
	// must not be changed.
	Request *http.Request
	// Scope is the key of the scope blocked.
	Scope string
	// For is how long the scope is blocked from now.
	For time.Duration
	// Reason is the server's reason, "quota exhausted" for a limit with
	// nothing remaining, or "" when the server named none.
	Reason string
}
