package heed

import (
	"context"
	"errors"
	"sync"
)

// Job runs many requests as one unit of work, with a cap on how many run
// at once.
//
// A retry count belongs to one request, so a burst of 429s can use up the
// retries of every request in flight at once. Job turns that into one
// failure of the whole job: the first item that fails with a rate-limit
// error (one that matches [ErrLimited], such as [CheckResponse]'s) stops the
// job from starting more items, cancels the context of those in flight, and
// Run returns a single [*LimitedError] saying when to try the job again.
//
// The zero Job runs DefaultConcurrency items at once.
type Job struct {
	// Concurrency caps the items running at once. Zero or less means
	// DefaultConcurrency.
	Concurrency int
}

// Run calls fn for each i in [0, n), at most j.Concurrency at a time, and
// waits for them. It returns nil when every call returned nil; a
// *LimitedError when any failed because of a rate limit, with the longest
// RetryAfter among them; and otherwise the first error. After the first
// error no new items start.
func (j Job) Run(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	conc := j.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	conc = min(conc, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu       sync.Mutex
		next     int
		firstErr error
		limited  *LimitedError
		wg       sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || firstErr != nil || limited != nil || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		var le *LimitedError
		switch {
		case errors.As(err, &le):
			if limited == nil {
				cp := *le
				limited = &cp
				cancel()
			} else if le.RetryAfter > limited.RetryAfter {
				limited.RetryAfter = le.RetryAfter
			}
		case errors.Is(err, ErrLimited):
			if limited == nil {
				limited = &LimitedError{Reason: "job", Err: err}
				cancel()
			}
		case firstErr == nil && limited == nil:
			firstErr = err
			cancel()
		}
	}
	for range conc {
		wg.Go(func() {
			for {
				i, ok := take()
				if !ok {
					return
				}
				if err := fn(ctx, i); err != nil {
					fail(err)
				}
			}
		})
	}
	wg.Wait()
	if limited != nil {
		return limited
	}
	if firstErr != nil {
		return firstErr
	}
	return context.Cause(ctx)
}
