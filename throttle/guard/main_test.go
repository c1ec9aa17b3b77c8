package guard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: an admitted
// Exclusive request runs a lease refresher until its hold ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
