package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

func TestConformanceShared(t *testing.T) {
	s := memstore.New()
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}

func TestLen(t *testing.T) {
	bg := context.Background()
	s := memstore.New()
	require.Zero(t, s.Len(), "a new store")
	for i := range 10 {
		k := storekit.Key("throttle", "len", strconv.Itoa(i))
		_, err := s.Acquire(bg, store.Request{Key: k, Token: "t", TTL: time.Minute, Fence: i < 3})
		require.NoError(t, err)
	}
	_, err := s.AllowN(bg, "q", store.Rate{Limit: 1, Window: time.Minute, Burst: 1}, 1)
	require.NoError(t, err)
	require.Equal(t, 10+3+1, s.Len(), "10 locks, 3 fence counters, 1 quota")
}
