package grpcadapter_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: a stream's
// Exclusive permit runs a lease refresher until it ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
