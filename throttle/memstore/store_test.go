package memstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) throttle.Store { return memstore.New() })
}

func TestConformanceShared(t *testing.T) {
	s := memstore.New()
	storetest.Run(t, func(t *testing.T) throttle.Store { return s })
}
