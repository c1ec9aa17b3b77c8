package guard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: an admitted
// Exclusive ticket runs a lease refresher until it is finished.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
