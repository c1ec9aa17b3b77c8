package redisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// TestConformance runs the shared store suite on one Redis server, once for
// every path of plain acquisitions: the default choice by refusals, SET NX
// alone, the SET+GET+PTTL pipeline and the acquire script.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	for _, path := range plainPaths {
		t.Run(path, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				s := redisstore.New(srv.Client(t), redisstore.WithPath(path))
				t.Cleanup(func() { _ = s.Close() })
				return s
			})
		})
	}
}
