package redisstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/redistest"
)

// The store starts goroutines for Watch; every test must leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, redistest.IgnoreResolver()...) }
