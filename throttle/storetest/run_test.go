package storetest_test

import (
	"testing"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/storetest"
)

func TestRunMemstore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) throttle.Store { return memstore.New() })
}
