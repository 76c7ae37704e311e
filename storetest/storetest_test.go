package storetest_test

import (
	"testing"
	"time"

	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

func newMemoryStore(t *testing.T, now func() time.Time) store.Store {
	return &memstore.Store{Now: now}
}

// The suite passes on the reference it is drawn from.
func TestRunMemoryStore(t *testing.T) { storetest.Run(t, newMemoryStore) }

// The reference agrees with itself: the differential driver is
// deterministic.
func TestDifferentialMemoryStore(t *testing.T) { storetest.Differential(t, newMemoryStore) }

func TestClock(t *testing.T) {
	c := storetest.NewClock()
	if got := c.Now(); !got.Equal(storetest.Start) {
		t.Fatalf("NewClock().Now() = %v, want %v", got, storetest.Start)
	}
	c.Advance(1500 * time.Millisecond)
	if got, want := c.Now(), storetest.Start.Add(1500*time.Millisecond); !got.Equal(want) {
		t.Errorf("Now() after Advance(1.5s) = %v, want %v", got, want)
	}
}
