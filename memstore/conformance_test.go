package memstore_test

import (
	"testing"
	"time"

	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

// MemoryStore passes the conformance suite that every Store passes.
func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		return &memstore.Store{Now: now}
	})
}
