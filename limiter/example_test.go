package limiter_test

import (
	"fmt"
	"time"

	"github.com/heedhttp/heed/limiter"
)

// A scope paced at 2 per second with a burst of 2: two go at once, the
// third books the turn half a second later.
func ExamplePace_Reserve() {
	p := limiter.Pace{Rate: 2, Burst: 2}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var tat time.Time
	for range 3 {
		var wait time.Duration
		tat, wait = p.Reserve(tat, now, 1)
		fmt.Println(wait)
	}
	// Output:
	// 0s
	// 0s
	// 500ms
}
