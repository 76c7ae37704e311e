package heed_test

import (
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/storetest"
)

// MemoryStore passes the conformance suite that every Store passes.
func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) heed.Store {
		return &heed.MemoryStore{Now: now}
	})
}
