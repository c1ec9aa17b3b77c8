package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// errDown is the error of a store whose server is gone: the call changed
// nothing, so the Limiter has nothing to clean up after it.
var errDown = fmt.Errorf("store is down: %w", store.ErrNotApplied)

// brokenStore fails every call, as a store does whose server is gone.
type brokenStore struct{}

func (brokenStore) Acquire(context.Context, store.Request) (store.Grant, error) {
	return store.Grant{}, errDown
}
func (brokenStore) Release(context.Context, string, string) (store.Outcome, error) {
	return 0, errDown
}
func (brokenStore) Extend(context.Context, string, string, time.Duration) (store.Outcome, error) {
	return 0, errDown
}

// switchStore is a working store that can be switched off, to test what the
// Limiter does while its store fails and after it recovers.
type switchStore struct {
	throttle.Store
	down  atomic.Bool
	calls atomic.Int64
}

func (s *switchStore) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return store.Grant{}, errDown
	}
	return s.Store.Acquire(ctx, req)
}

func (s *switchStore) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Release(ctx, key, token)
}

func (s *switchStore) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Extend(ctx, key, token, ttl)
}

// hangStore never answers until the context ends, like a Redis that
// accepted the connection and went silent.
type hangStore struct{ brokenStore }

func (hangStore) Acquire(ctx context.Context, _ store.Request) (store.Grant, error) {
	<-ctx.Done()
	return store.Grant{}, ctx.Err()
}

func TestAcquireContended(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, memstore.New(), throttle.Policy{Name: "submit", Window: time.Minute})
	lease, err := l.Acquire(ctx, "42")
	if err != nil {
		t.Fatal(err)
	}
	if lease.Key() != "throttle:{submit:42}" || lease.TTL() != time.Minute || lease.ValidFor() <= 0 {
		t.Fatalf("lease: key %q ttl %v valid %v", lease.Key(), lease.TTL(), lease.ValidFor())
	}
	_, err = l.Acquire(ctx, "42")
	var ce *throttle.ContendedError
	if !errors.Is(err, throttle.ErrContended) || !errors.As(err, &ce) || ce.RetryAfter <= 0 || ce.RetryAfter > time.Minute {
		t.Fatalf("second acquire: %v", err)
	}
	if errors.Is(err, throttle.ErrStore) {
		t.Fatal("a held key must not look like a store error")
	}
	if _, err := l.Acquire(ctx, "43"); err != nil {
		t.Fatalf("another id: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); !errors.Is(err, throttle.ErrNotHeld) {
		t.Fatalf("second release: %v", err)
	}
	if _, err := l.Acquire(ctx, "42"); err != nil {
		t.Fatalf("after release: %v", err)
	}
	if s := l.Stats(); s.Acquired != 3 || s.Rejected != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestAcquireCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := newLimiter(t, memstore.New(), throttle.Policy{Name: "submit"})
	if _, err := l.Acquire(ctx, "1"); !errors.Is(err, context.Canceled) || errors.Is(err, throttle.ErrStore) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestAcquireStoreTimeout(t *testing.T) {
	l := newLimiter(t, hangStore{}, throttle.Policy{Name: "submit", Timeout: 20 * time.Millisecond, Window: 200 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background(), "1")
		done <- err
	}()
	select {
	case err := <-done:
		// The caller's context did not end: the error is the store's, and
		// matches no context error (each error matches one sentinel).
		if !errors.Is(err, throttle.ErrStore) || errors.Is(err, context.DeadlineExceeded) ||
			!strings.Contains(err.Error(), "answered no call") {
			t.Fatalf("err = %v, want a store error saying that the store was silent", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a silent store was not bounded by Policy.Timeout")
	}
}

func TestAdmitDecisions(t *testing.T) {
	ctx := context.Background()
	t.Run("contended", func(t *testing.T) {
		l := newLimiter(t, memstore.New(), throttle.Policy{Name: "submit", Window: 3 * time.Second})
		if lease, err := l.Admit(ctx, "u"); lease == nil || err != nil {
			t.Fatalf("first: %v %v", lease, err)
		}
		_, err := l.Admit(ctx, "u")
		var ce *throttle.ContendedError
		if !errors.As(err, &ce) || ce.RetryAfter <= 0 || ce.RetryAfter > 3*time.Second {
			t.Fatalf("duplicate: %v", err)
		}
	})
	t.Run("fail open", func(t *testing.T) {
		l := newLimiter(t, brokenStore{}, throttle.Policy{Name: "submit"})
		if lease, err := l.Admit(ctx, "u"); lease != nil || err != nil {
			t.Fatalf("got %v %v, want through unguarded", lease, err)
		}
		if s := l.Stats(); s.FailedOpen != 1 || s.StoreErrors != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
	t.Run("fail closed", func(t *testing.T) {
		l := newLimiter(t, brokenStore{}, throttle.Policy{Name: "submit", WhenStoreFails: throttle.FailClosed})
		lease, err := l.Admit(ctx, "u")
		if lease != nil || !errors.Is(err, throttle.ErrStore) || !errors.Is(err, errDown) {
			t.Fatalf("got %v %v, want a store error wrapping the store's", lease, err)
		}
		if s := l.Stats(); s.FailedOpen != 0 || s.StoreErrors != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
	t.Run("exclusive fails closed by default", func(t *testing.T) {
		l := newLimiter(t, brokenStore{}, throttle.Policy{Name: "sync", Mode: throttle.Exclusive})
		if _, err := l.Admit(ctx, "u"); !errors.Is(err, throttle.ErrStore) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		l := newLimiter(t, memstore.New(), throttle.Policy{Name: "submit"})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.Admit(cctx, "u"); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}
