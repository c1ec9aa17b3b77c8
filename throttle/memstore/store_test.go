package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) throttle.Store { return memstore.New() })
}

func TestConformanceShared(t *testing.T) {
	s := memstore.New()
	storetest.Run(t, func(t *testing.T) throttle.Store { return s })
}

func TestLen(t *testing.T) {
	bg := context.Background()
	s := memstore.New()
	if n := s.Len(); n != 0 {
		t.Fatalf("Len of a new store = %d", n)
	}
	for i := range 10 {
		k := store.Key("throttle", "len", strconv.Itoa(i))
		if _, err := s.Acquire(bg, store.Request{Key: k, Token: "t", TTL: time.Minute, Fence: i < 3}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AllowN(bg, "q", store.Rate{Limit: 1, Window: time.Minute, Burst: 1}, 1); err != nil {
		t.Fatal(err)
	}
	if n := s.Len(); n != 10+3+1 {
		t.Fatalf("Len = %d, want 14: 10 locks, 3 fence counters, 1 quota", n)
	}
}
