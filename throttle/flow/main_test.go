package flow

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: an Exclusive
// permit runs a lease refresher until it is ended.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
