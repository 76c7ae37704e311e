package storetest

import (
	"sync"
	"time"
)

// Start is the instant at which a [Clock] starts: a whole second, so that
// clocks advanced in whole microseconds stay on the microsecond grid that
// stores with microsecond lease expiry use.
var Start = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Clock is a manual clock: its time moves only when [Clock.Advance] is
// called, so a suite of minutes of store time runs at once and its waits
// are exact. A Clock is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at [Start].
func NewClock() *Clock { return &Clock{now: Start} }

// Now returns the clock's time. Pass the method value c.Now to a store.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
