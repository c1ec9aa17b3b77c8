package faultproxy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// proxy's Close must wait for every goroutine it started.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
