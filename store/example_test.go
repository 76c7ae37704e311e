package store_test

import (
	"fmt"

	"github.com/heedhttp/heed/store"
)

// A RateUpdate either sets a rate or changes the one a store holds: AIMD's
// cut multiplies it, its raise adds to it, within bounds.
func ExampleRateUpdate_Apply() {
	cut := store.RateUpdate{Factor: 0.9, Default: 50, Min: 0.02, Max: 200}
	fmt.Println(cut.Apply(0), cut.Apply(20))
	raise := store.RateUpdate{Add: 0.04, Default: 50, Max: 200}
	fmt.Printf("%.2f\n", raise.Apply(18))
	// Output:
	// 45 18
	// 18.04
}
