package proxy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine of the proxy outlives the tests: not a wait, not a send,
// not a copy of a response being cached.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
