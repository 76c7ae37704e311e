package redisstore

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine outlives its test: a Store's block guard ends with its
// blocks or at Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
