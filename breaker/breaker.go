// Package breaker is a circuit breaker for calls to an upstream that may be
// degraded: closed, it lets every call through and counts failures; after
// too many failures within a window it opens and refuses calls at once;
// after a pause it lets a few probe calls through (half-open), and closes
// again when they succeed.
//
// The core is deterministic: every method takes the time it acts at, so
// tests drive it without a clock. The caller decides what a failure is;
// heed counts transport errors and 5xx responses, never a 429, which means
// the server is healthy and enforcing its limits.
//
// Calls are two-step, as in sony/gobreaker: Allow says whether a call may
// go and returns a done func to report its outcome. A done func from an
// earlier generation (before the breaker changed state) is ignored, so a
// slow call that started before the breaker opened cannot close it.
package breaker

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// State is a breaker's state.
type State uint8

// States.
const (
	Closed   State = iota // calls go through; failures are counted
	Open                  // calls are refused until the pause ends
	HalfOpen              // a few probe calls go through
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "unknown"
}

// Defaults of a zero Settings.
const (
	DefaultFailures = 5
	DefaultWindow   = 10 * time.Second
	DefaultOpenFor  = 30 * time.Second
	DefaultProbes   = 1
)

// Settings configure a Breaker. The zero Settings use the defaults.
type Settings struct {
	// Failures is how many failures within Window open the breaker. Zero
	// means DefaultFailures.
	Failures int
	// Window is how long a failure counts. Zero means DefaultWindow.
	Window time.Duration
	// OpenFor is how long the breaker stays open before probing. Zero
	// means DefaultOpenFor.
	OpenFor time.Duration
	// Probes is how many calls may be in flight while half-open, and how
	// many must succeed to close the breaker. Zero means DefaultProbes.
	Probes int
}

// ErrOpen is the sentinel every refusal matches: errors.Is(err,
// breaker.ErrOpen) is true for an [*OpenError].
var ErrOpen = errors.New("breaker: open")

// OpenError reports a call refused because the breaker is open, or because
// its half-open probes are all in flight.
type OpenError struct {
	// Name names what the breaker guards, such as a tenant.
	Name string
	// RetryAfter is how long until the breaker lets a probe through.
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("breaker: %q is open; retry in %v", e.Name, e.RetryAfter.Round(time.Millisecond))
}

// Is reports whether target is [ErrOpen].
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Breaker is a circuit breaker. The zero Breaker is closed and uses the
// default Settings. A Breaker is safe for concurrent use.
type Breaker struct {
	// Name names what the breaker guards, in errors.
	Name string
	// Settings shape the breaker; set them before first use.
	Settings Settings

	mu         sync.Mutex
	state      State
	generation uint64
	failures   []time.Time // within the window, oldest first; closed only
	openedAt   time.Time
	inFlight   int // half-open probes in flight
	successes  int // half-open probes that succeeded
}

func (b *Breaker) failuresToOpen() int { return orDefault(b.Settings.Failures, DefaultFailures) }
func (b *Breaker) window() time.Duration {
	return orDefault(b.Settings.Window, DefaultWindow)
}
func (b *Breaker) openFor() time.Duration { return orDefault(b.Settings.OpenFor, DefaultOpenFor) }
func (b *Breaker) probes() int            { return orDefault(b.Settings.Probes, DefaultProbes) }

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// State returns the breaker's state at now.
func (b *Breaker) State(now time.Time) State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	return b.state
}

// advance moves an open breaker whose pause is over to half-open.
func (b *Breaker) advance(now time.Time) {
	if b.state == Open && !now.Before(b.openedAt.Add(b.openFor())) {
		b.set(HalfOpen)
	}
}

func (b *Breaker) set(s State) {
	b.state = s
	b.generation++
	b.failures = b.failures[:0]
	b.inFlight, b.successes = 0, 0
}

// Allow reports whether a call may go at now. If it may, the caller makes
// the call and then calls done exactly once with whether it failed and
// when it ended. If it may not, Allow returns an [*OpenError].
func (b *Breaker) Allow(now time.Time) (done func(failed bool, at time.Time), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	switch b.state {
	case Open:
		return nil, &OpenError{Name: b.Name, RetryAfter: b.openedAt.Add(b.openFor()).Sub(now)}
	case HalfOpen:
		if b.inFlight >= b.probes() {
			return nil, &OpenError{Name: b.Name}
		}
		b.inFlight++
	}
	gen := b.generation
	return func(failed bool, at time.Time) { b.done(gen, failed, at) }, nil
}

func (b *Breaker) done(gen uint64, failed bool, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.generation {
		return // the breaker changed state since this call began
	}
	switch b.state {
	case Closed:
		if !failed {
			return
		}
		// Forget failures that have left the window, then count this one.
		cut := 0
		for cut < len(b.failures) && !b.failures[cut].After(at.Add(-b.window())) {
			cut++
		}
		b.failures = append(b.failures[:0], b.failures[cut:]...)
		b.failures = append(b.failures, at)
		if len(b.failures) >= b.failuresToOpen() {
			b.set(Open)
			b.openedAt = at
		}
	case HalfOpen:
		b.inFlight--
		if failed {
			b.set(Open)
			b.openedAt = at
			return
		}
		b.successes++
		if b.successes >= b.probes() {
			b.set(Closed)
		}
	}
}
