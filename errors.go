package heed

import (
	"errors"
	"fmt"
	"time"
)

// ErrLimited is the sentinel every rate-limit error matches:
// errors.Is(err, heed.ErrLimited) is true for a [*LimitedError].
var ErrLimited = errors.New("heed: rate limited")

// LimitedError reports that a request was, or would be, rate limited: the
// server answered 429 (or 503 with a wait), or heed refused to send the
// request because its scope is blocked or the wait exceeds the caller's
// budget.
type LimitedError struct {
	// Scope is the key of the scope that is limited, in one format
	// everywhere heed reports a scope (events, logs, the store):
	//
	//	global                                   every tenant: an app-wide quota
	//	https://acme.atlassian.net               a tenant: an origin
	//	https://api.github.com#3fa9c2d1e0b4      a tenant: an origin and an account hash
	//	<tenant> GET /rest/api/3/issue/{id}      an endpoint: method and path template
	//	<tenant> key:PROJ-1                      a resource written to
	//	<tenant> limit:core                      a limit the server named
	//
	// An account is named by a short keyed hash, never a raw credential.
	Scope string
	// RetryAfter is how long to wait before trying again. It is at least
	// one second for a 429.
	RetryAfter time.Duration
	// Reason is the server's reason (RateLimit-Reason and the like), or what
	// held the request back locally ("blocked", "paced", "busy", "spaced").
	Reason string
	// StatusCode is the response's status when the server limited the
	// request, or zero when heed refused it without sending.
	StatusCode int
	// Err is the underlying cause, if any, such as context.DeadlineExceeded
	// when the wait would outlive the context.
	Err error
}

func (e *LimitedError) Error() string {
	who := "limited"
	if e.StatusCode != 0 {
		who = fmt.Sprintf("limited by the server (%d)", e.StatusCode)
	}
	msg := fmt.Sprintf("heed: scope %q %s; retry in %v", e.Scope, who, e.RetryAfter.Round(time.Millisecond))
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is [ErrLimited].
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }

// Unwrap returns the underlying cause.
func (e *LimitedError) Unwrap() error { return e.Err }

// ErrNotRewindable reports that a request's body could not be produced
// again for a retry: its GetBody failed. (A request with no GetBody at all
// is simply not retried: its response is returned.)
var ErrNotRewindable = errors.New("heed: request body cannot be rewound")
