package overload_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: a waiter, its
// timer, a simulated client.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
