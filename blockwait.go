package heed

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed/store"
)

// blockWaits keeps a block's end first come, first served. Each request
// that waits out a block wakes a little after its end (a jitter, so that
// they do not all go at once); a request arriving meanwhile found the
// scope open and the window's new count, and took it first, leaving a
// waiter to wait a window more (the longest wait behind a rounded-up
// reset was 1.9 times a FIFO queue's). So the requests waiting out a
// scope's block are counted, with the latest moment one of them wakes;
// a request arriving once the block has ended, while some have not yet
// asked again, waits until they have (or that moment has passed) before
// it asks. At most maxBlockWaits scopes are held; past that, arrivals go
// as before.
type blockWaits struct {
	n  atomic.Int32 // scopes with waiters: zero makes every check free
	mu sync.Mutex
	m  map[string]*blockWait
}

type blockWait struct {
	waiting int           // requests asleep on the scope's block, or not yet asked again
	end     time.Time     // the block's end
	wake    time.Time     // the latest a waiter wakes
	clear   chan struct{} // closed once every waiter has asked again
}

// blockWaitMargin is how long past the latest waiter's wake a request
// arriving behind them waits at most: time for them to ask again.
const blockWaitMargin = 50 * time.Millisecond

const maxBlockWaits = 256

// add counts a request asleep on key's block, which ends at end, until it
// wakes at wake; it reports whether it was counted (the caller then calls
// done once, when it has asked again or given up).
func (b *blockWaits) add(key string, end, wake time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]*blockWait)
	}
	w := b.m[key]
	if w == nil {
		if len(b.m) >= maxBlockWaits {
			return false
		}
		w = &blockWait{clear: make(chan struct{})}
		b.m[key] = w
		b.n.Add(1)
	}
	w.waiting++
	if end.After(w.end) {
		w.end = end
	}
	if wake.After(w.wake) {
		w.wake = wake
	}
	return true
}

// done uncounts a request add counted.
func (b *blockWaits) done(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.m[key]; w != nil {
		if w.waiting--; w.waiting <= 0 {
			close(w.clear)
			delete(b.m, key)
			b.n.Add(-1)
		}
	}
}

// behind returns, for a request arriving at now on scopes, the waiters
// out a block of one of them that has ended and who have not all asked
// again: the scope, a channel closed once they have, and the longest to
// wait for it (the latest wake, and blockWaitMargin); nil when none.
func (b *blockWaits) behind(scopes []store.ScopeAdmit, now time.Time) (key string, clear <-chan struct{}, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range scopes {
		if w := b.m[scopes[i].Key]; w != nil && !now.Before(w.end) {
			return scopes[i].Key, w.clear, max(w.wake.Sub(now), 0) + blockWaitMargin
		}
	}
	return "", nil, 0
}

// sleepUntil waits until done is closed (never, when nil) or d has
// passed, or ctx ends.
func (t *Transport) sleepUntil(ctx context.Context, done <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
