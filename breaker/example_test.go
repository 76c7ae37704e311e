package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/heedhttp/heed/breaker"
)

func ExampleBreaker() {
	b := &breaker.Breaker{Name: "acme", Settings: breaker.Settings{Failures: 2, OpenFor: time.Minute}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for range 2 {
		done, _ := b.Allow(now)
		done(true, now) // a 5xx or a transport error
	}
	_, err := b.Allow(now.Add(10 * time.Second))
	fmt.Println(b.State(now), errors.Is(err, breaker.ErrOpen))
	fmt.Println(err)
	// Output:
	// open true
	// breaker: "acme" is open; retry in 50s
}
