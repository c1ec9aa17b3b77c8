package otelthrottle_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: lease
// refreshers, or anything the SDK readers and span processors start.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
