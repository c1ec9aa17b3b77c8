package redlock_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: node calls that outlive a
// decision, releases of partial locks, watches and the per-node stores'
// goroutines all end by Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
