package rueidisstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/redistest"
)

// The store starts goroutines for Watch, and rueidis for its connections;
// every test must leave none behind once both are closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, redistest.IgnoreResolver()...) }
